/**
 * A process that serves the query API (or the console) takes hooks before its store is ready (cli/runtime.ts): until
 * the store's migrations have run, the routes that read it answer 503 with Retry-After, the hook routes their usual
 * answer; after, the API answers as it always does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { delivery } from '../test/fixtures/index.js';
import { hookEvent } from '../test/support/instances.js';
import { postDelivery, TEST_SECRET } from '../test/support/hooklog-config.js';
import { silentLogger } from '../platform/log.js';
import { openStore } from '../platform/store/index.js';
import { openEmbeddedStream } from '../platform/stream/embedded/index.js';
import { topicNames } from '../platform/stream/headers.js';
import { createApp } from './app.js';
import { parseConfig } from './config/load.js';

const KEY = 'analyst-key-0123456789abcdef';
const dir = mkdtempSync(join(tmpdir(), 'hooklog-gate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('routes that read the store while it starts', () => {
  it('answer 503 with Retry-After until the store is ready, while hooks are acknowledged', async () => {
    const config = parseConfig({
      data_dir: join(dir, 'data'),
      api: { keys: [KEY] },
      event_hook_receiver: { retry_after_seconds: 3 },
      event_hooks: [{ id: 'okta-main', org: 'acme', auth: { header: 'authorization', secrets: [TEST_SECRET] } }],
    });
    const stream = await openEmbeddedStream({ dataDir: join(dir, 'data') });
    const store = openStore({ database: 'gate', dataDir: join(dir, 'data'), logger: silentLogger() });
    const topics = topicNames(config.stream.topic_prefix);
    await stream.ensureTopics(Object.values(topics).map((name) => ({ name, partitions: 1 })));
    let starting = true;
    const app = createApp({
      config,
      stream,
      topics,
      probes: [],
      logger: silentLogger(),
      store,
      storeStarting: () => starting,
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const api = () => fetch(`${url}/api/queries`, { headers: { authorization: `Bearer ${KEY}` } });
    try {
      const refused = await api();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('3');
      expect(await postDelivery(url, 'okta-main', delivery('acme', 'okta-main', [hookEvent(1)]))).toBe(204);
      starting = false;
      const served = await api();
      expect(served.status).toBe(200);
      expect(((await served.json()) as { queries: unknown[] }).queries.length).toBeGreaterThan(0);
    } finally {
      await new Promise((r) => server.close(r));
      await store.close();
      await stream.close();
    }
  });
});
