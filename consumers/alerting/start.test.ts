/**
 * Alerting inside `hooklog start` (the real CLI, embedded stream and chdb):
 * an event hook delivery with detectable events ends up as Slack-formatted
 * webhook posts and rows in the alerts table, once per finding.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../../test/support/cli.js';
import { FIXTURES_DIR, delivery } from '../../test/fixtures/index.js';
import { postDelivery, storeRows, writeTestConfig, type TestInstance } from '../../test/support/hooklog-config.js';
import { waitFor } from '../../test/support/wait.js';

const posts: Array<{ id: string; text: string }> = [];
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    posts.push({ id: String(req.headers['x-hooklog-alert-id']), text: (JSON.parse(body) as { text: string }).text });
    res.writeHead(200).end('ok');
  });
});
let daemon: Daemon | undefined;
let inst: TestInstance;

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/slack`;
  inst = writeTestConfig({
    extra: {
      alerting: {
        sigma_paths: [`${FIXTURES_DIR}sigma`],
        rules: [
          {
            id: 'grant-then-token',
            type: 'sequence',
            window_ms: 600_000,
            group_by: ['actor.alternateId'],
            first: { s: { eventType: 'user.account.privilege.grant' }, condition: 's' },
            then: { s: { eventType: 'system.api_token.create' }, condition: 's' },
          },
        ],
        max_batch_wait_ms: 50,
        webhooks: [{ name: 'slack', url, format: 'slack' }],
      },
    },
  });
  daemon = await startDaemon(['-c', inst.configPath]);
}, 120_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  await new Promise<void>((r) => receiver.close(() => r()));
});

describe('alerting in hooklog start', () => {
  it('turns detectable events into one webhook post and one table row per finding', async () => {
    const t = Date.now();
    const ev = (eventType: string, dt: number) => ({
      uuid: randomUUID(),
      published: new Date(t + dt).toISOString(),
      eventType,
      displayMessage: eventType,
      actor: { alternateId: 'mallory@acme.example', type: 'User' },
      outcome: { result: 'SUCCESS' },
    });
    // Sigma (test/fixtures/sigma): admin_role_granted and api_token_created; ours: the sequence.
    const events = [
      ev('user.account.privilege.grant', 0),
      ev('system.api_token.create', 60_000),
      ev('user.session.start', 70_000),
    ];
    expect(await postDelivery(daemon!.url, inst.hookId, delivery(inst.org, inst.hookId, events))).toBe(204);
    // The service retries a delivery it thinks failed: the same events again must not alert again.
    expect(await postDelivery(daemon!.url, inst.hookId, delivery(inst.org, inst.hookId, events))).toBe(204);

    await waitFor(() => posts.length, {
      until: (n) => n >= 3,
      timeoutMs: 30_000,
      what: 'webhook posts',
      seen: () => daemon!.output().slice(-2000),
    });
    const texts = posts.map((p) => p.text).join('\n');
    expect(texts).toContain('Okta API Token Created');
    expect(texts).toContain('grant-then-token');

    const perRule = 'SELECT rule_id, count() AS n FROM alerts FINAL GROUP BY rule_id ORDER BY rule_id';
    // Polled through the daemon's admin socket (no process per poll), then read once through `hooklog sql`.
    await waitFor(() => storeRows(inst.configPath, perRule), { until: (r) => r.length >= 3, what: 'alerts table' });
    const sql = await runCli(['-c', inst.configPath, 'sql', perRule, '-f', 'json']);
    expect(sql.code, sql.stderr).toBe(0);
    const rows = JSON.parse(sql.stdout) as Array<{ rule_id: string; n: string | number }>;
    expect(rows.map((r) => Number(r.n))).toEqual([1, 1, 1]);
    expect(new Set(posts.map((p) => p.id)).size).toBe(posts.length);
  });
});
