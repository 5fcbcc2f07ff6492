/**
 * `hooklog actions`: the list folds each action's steps (rows of the actions
 * table, mapped as the sink maps the records) into its latest state, and an
 * approval is made only for an action waiting for one, keyed by its org.
 * Against embedded ClickHouse (chdb), the store `hooklog actions` opens when no
 * hooklog is running.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../platform/log.js';
import { migrate, openStore } from '../platform/store/index.js';
import type { ConsumedRecord } from '../platform/stream/types.js';
import { actionStreamRecord, type ActionRecord } from '../consumers/response/records.js';
import { mapActionRecord } from '../consumers/response/rows.js';
import { actionsQuery, approveAction } from './actions-command.js';
import { parseConfig } from './config/load.js';
import { runSql } from './sql.js';

const dir = mkdtempSync(join(tmpdir(), 'hooklog-actions-'));
const config = parseConfig({ data_dir: dir, store: { database: 'actions_cli' } }, {});
const ID = (n: number) => n.toString(16).padStart(32, '0');

const step = (
  id: string,
  state: ActionRecord['state'],
  at: string,
  extra: Partial<ActionRecord> = {},
): ActionRecord => ({
  action_id: id,
  org: 'acme',
  state,
  at,
  ...(state === 'approved'
    ? {}
    : { action: 'suspend', user_id: '00uann', user_login: 'ann@acme.test', rule_id: 'travel' }),
  ...extra,
});

beforeAll(async () => {
  const store = openStore({ database: 'actions_cli', dataDir: dir, logger: silentLogger() });
  await migrate(store, silentLogger());
  const steps = [
    step(ID(1), 'requested', '2026-03-01T10:00:00.000Z'),
    step(ID(1), 'started', '2026-03-01T10:00:00.100Z', { attempt: 1 }),
    step(ID(1), 'done', '2026-03-01T10:00:00.200Z', { attempt: 1, status: 200 }),
    step(ID(2), 'awaiting_approval', '2026-03-01T11:00:00.000Z'),
    step(ID(3), 'awaiting_approval', '2026-03-01T12:00:00.000Z'),
    step(ID(3), 'approved', '2026-03-01T12:05:00.000Z', { by: 'sec-oncall' }),
    step(ID(3), 'started', '2026-03-01T12:05:00.050Z', { attempt: 1, by: 'sec-oncall' }),
    step(ID(3), 'failed', '2026-03-01T12:05:00.090Z', {
      attempt: 1,
      by: 'sec-oncall',
      status: 400,
      error_code: 'E0000001',
      error: 'E0000001: Api validation failed: suspend (Cannot suspend a user that is not active)',
    }),
  ];
  const rows = steps.map((s) => {
    const rec = { ...actionStreamRecord(s), topic: 't', partition: 0, offset: 0, timestamp: 0 } as ConsumedRecord;
    const mapped = mapActionRecord(rec);
    if (!mapped.ok) throw new Error(mapped.reason);
    return mapped.row;
  });
  await store.insertJson('actions', rows);
  await store.close();
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('hooklog actions', () => {
  it('lists each action once, in its latest state, with who approved and what the service said', async () => {
    const r = await runSql(config, actionsQuery({ limit: 10 }));
    expect(r.rows.map((x) => [x.action_id, x.state])).toEqual([
      [ID(3), 'failed'],
      [ID(2), 'awaiting_approval'],
      [ID(1), 'done'],
    ]);
    expect(r.rows[0]).toMatchObject({
      action: 'suspend',
      user_id: '00uann',
      approved_by: 'sec-oncall',
      error: 'E0000001: Api validation failed: suspend (Cannot suspend a user that is not active)',
    });
    const waiting = await runSql(config, actionsQuery({ state: 'awaiting_approval', org: 'acme', limit: 10 }));
    expect(waiting.rows.map((x) => x.action_id)).toEqual([ID(2)]);
    expect(() => actionsQuery({ state: 'pending', limit: 1 })).toThrow(/--state must be one of/);
    expect(() => actionsQuery({ org: "x' OR 1=1", limit: 1 })).toThrow();
  });

  it('approves only what waits, keyed by its org; refuses the rest naming its state', async () => {
    const appended: ActionRecord[] = [];
    const append = async (r: ActionRecord) => void appended.push(r);
    const r = await approveAction(config, ID(2), 'sec-oncall', append);
    expect(appended).toEqual([r]);
    expect(r).toMatchObject({ action_id: ID(2), org: 'acme', state: 'approved', by: 'sec-oncall' });
    expect(actionStreamRecord(r).key).toBe('acme');
    await expect(approveAction(config, ID(1), 'x', append)).rejects.toThrow(
      `action ${ID(1)} is done: only awaiting_approval or uncertain can be approved`,
    );
    await expect(approveAction(config, ID(9), 'x', append)).rejects.toThrow(`no action ${ID(9)} in the actions table`);
    expect(appended).toHaveLength(1);
  });
});
