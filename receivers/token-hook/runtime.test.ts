/**
 * The token hook as `hooklog start` runs it (cli/runtime.ts): config from
 * YAML-shaped input, embedded stream and chdb, the route mounted, decisions
 * reaching `{db}.token_decisions` through the sink, and a clean stop.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startHooklog, type Running } from '../../cli/runtime.js';
import { parseConfig } from '../../cli/config/load.js';
import { silentLogger } from '../../platform/log.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { HOOK_SECRET, freshDir, postToken, sampleRequest } from './testing.js';

let running: Running | undefined;
afterAll(async () => {
  await running?.stop();
});

describe('token hook in the running process', () => {
  it('answers on /hooks/token/:id and stores each decision in token_decisions', async () => {
    const dir = freshDir('token-runtime');
    const db = randomName('tokrt');
    const config = parseConfig(
      {
        data_dir: join(dir, 'data'),
        server: { host: '127.0.0.1', port: 0 },
        stream: { topic_prefix: randomName('rt'), partitions: 1 },
        store: { database: db },
        sink: { max_batch_wait_ms: 50 },
        token_hooks: [
          {
            id: 'th',
            org: 'acme',
            auth: { type: 'header', secrets: [HOOK_SECRET] },
            rules: [
              {
                name: 'tag',
                when: { scopes_any: ['openid'] },
                actions: [{ add: { tokens: 'access', claim: 'tagged', value: true } }],
              },
            ],
          },
        ],
      },
      {},
    );
    running = await startHooklog(config, silentLogger());
    expect(running.topics.tokenDecisions).toBe(`${config.stream.topic_prefix}.token-decisions`);

    const res = await postToken(running.url, sampleRequest());
    expect(res).toEqual({
      status: 200,
      json: {
        commands: [{ type: 'com.okta.access.patch', value: [{ op: 'add', path: '/claims/tagged', value: true }] }],
      },
    });
    const store = running.store!;
    const rows = await waitFor(
      async () => {
        const got = await store.query<{ outcome: string; rules_matched: string[]; hook_id: string }>(
          `SELECT outcome, rules_matched, hook_id FROM ${db}.token_decisions FINAL`,
        );
        return got;
      },
      { until: (found) => found.length > 0, what: 'a row in token_decisions' },
    );
    expect(rows).toEqual([{ outcome: 'commands', rules_matched: ['tag'], hook_id: 'th' }]);
    const applied = await store.query<{ name: string }>(
      `SELECT name FROM ${db}.schema_migrations FINAL ORDER BY version`,
    );
    expect(applied.map((r) => r.name)).toContain('token_decisions');
  });
});
