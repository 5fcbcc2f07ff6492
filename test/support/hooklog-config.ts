import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';

export const TEST_SECRET = 'test-secret-0123456789abcdef';

export interface TestInstance {
  readonly dir: string;
  readonly configPath: string;
  readonly hookId: string;
  readonly org: string;
}

/** Writes a hooklog.yaml for one test instance: its own data dir, topics prefix and database. */
export function writeTestConfig(opts: { kafkaBrokers?: string; extra?: Record<string, unknown> } = {}): TestInstance {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-e2e-'));
  const suffix = Math.random().toString(36).slice(2, 8);
  const hookId = 'okta-main';
  const org = `acme-${suffix}`;
  const config = {
    data_dir: join(dir, 'data'),
    log_level: 'info',
    server: { host: '127.0.0.1', port: 0 },
    stream: {
      topic_prefix: `e2e-${suffix}`,
      partitions: 2,
      ...(opts.kafkaBrokers
        ? { kafka: { brokers: opts.kafkaBrokers.split(','), client_id: `hooklog-e2e-${suffix}` } }
        : {}),
    },
    store: { database: `e2e_${suffix}` },
    sink: { group: `sink-${suffix}`, max_batch_wait_ms: 200 },
    event_hooks: [{ id: hookId, org, auth: { header: 'authorization', secrets: [TEST_SECRET] } }],
    ...opts.extra,
  };
  const configPath = join(dir, 'hooklog.yaml');
  writeFileSync(configPath, stringify(config));
  return { dir, configPath, hookId, org };
}

/** POSTs a delivery the way the service does: JSON, the auth header, a 3 s time-out. */
export async function postDelivery(
  baseUrl: string,
  hookId: string,
  body: unknown,
  secret = TEST_SECRET,
): Promise<number> {
  const res = await fetch(`${baseUrl}/hooks/events/${hookId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: secret },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(3000),
  });
  await res.arrayBuffer();
  return res.status;
}

/**
 * Rows of a query to the hooklog running on a config's data dir, through its admin socket: what `hooklog sql`
 * answers while a daemon runs (it asks the same socket), without starting a process, so a wait can poll it.
 */
export async function storeRows(configPath: string, sql: string): Promise<Array<Record<string, unknown>>> {
  const { data_dir: dataDir } = parse(readFileSync(configPath, 'utf8')) as { data_dir: string };
  const rs = await queryViaAdminSocket(dataDir, sql);
  if (!rs) throw new Error(`no hooklog answers on the admin socket of ${dataDir}`);
  return rs.rows as Array<Record<string, unknown>>;
}
