/**
 * The response loop through the real CLI (`hooklog start`, the shared Kafka
 * broker, embedded ClickHouse), with `kill -9` where it hurts most:
 *
 * 1. ann's risk goes high: the org receives the SET and, before it answers,
 *    the instance is killed (between the change and the recorded SET). The
 *    next instance sends the same bytes again; the org counts one SET. Ann's
 *    sessions are cleared once.
 * 2. bob's risk goes high: once the org has his SET, the instance is killed as
 *    the sessions call arrives (between the SET and the action). The next
 *    instance clears his sessions, once.
 * 3. ann's risk expires: a SET lowers it again.
 *
 * The org verifies every SET against the JWKS it fetches from hooklog's
 * well-known URL. `hooklog actions list` and `hooklog sql` show the records.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { silentLogger } from '../../platform/log.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import type { Stream } from '../../platform/stream/types.js';
import { USER_RISK_CHANGE } from '../../consumers/response/config.js';
import { riskChange } from '../../consumers/response/testing.js';
import { kafkaBrokerList, kafkaBrokers } from '../kafka/inject.js';
import { runCli } from '../support/cli.js';
import { writeTestConfig } from '../support/hooklog-config.js';
import { spawnHooklog, type Instance } from '../support/instances.js';
import { randomName, waitFor } from '../support/wait.js';
import {
  appendChanges,
  changedResends,
  freePort,
  responseSections,
  startResponseOrgs,
  type ResponseOrg,
} from './response.js';

const instances: Instance[] = [];
let org: ResponseOrg | undefined;
let stream: Stream | undefined;
afterAll(async () => {
  for (const i of instances) await i.kill('SIGKILL');
  await org?.sim.stop();
  await stream?.close();
});

describe('response through the CLI, with kill -9 between the change and the SET and between the SET and the action', () => {
  it('one SET per change, verified; sessions cleared once per user; the expiry lowers the risk again', async () => {
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    [org] = await startResponseOrgs(1, 2, issuer, ['tok-a', 'tok-b', 'tok-c']);
    const o = org!;
    const inst = writeTestConfig({
      kafkaBrokers: kafkaBrokers(),
      extra: { server: { host: '127.0.0.1', port }, ...responseSections([o], issuer, randomName('resp')) },
    });
    const prefix = (parse(readFileSync(inst.configPath, 'utf8')) as { stream: { topic_prefix: string } }).stream
      .topic_prefix;
    const start = async (name: string) => {
      const p = spawnHooklog(name, ['--config', inst.configPath], { ORG_TOKEN: `tok-${name}` });
      instances.push(p);
      await p.started(90_000);
      return p;
    };
    const a = await start('a');
    stream = await openKafkaStream({ brokers: kafkaBrokerList(), clientId: randomName('e2e'), logger: silentLogger() });

    // 1. Killed when the org has ann's SET but before it answers; a's sessions call may not get through either.
    let aDead = false;
    o.sets.onReceive = async () => {
      if (aDead) return;
      aDead = true;
      await a.kill('SIGKILL');
    };
    o.users.beforePerform = async (_action, _user, client) => {
      if (client !== 'SSWS tok-a') return;
      await waitFor(() => aDead, { what: 'a killed', timeoutMs: 60_000 });
      return 'drop';
    };
    const ann = { id: '00uann', login: 'ann@acme.test' };
    const annUp = riskChange(o.id, ann, 'none', 'high');
    await appendChanges(stream, prefix, [annUp]);
    await waitFor(() => aDead && !a.running(), { what: 'a killed at the SET', timeoutMs: 60_000 });
    expect(o.sets.accepted).toHaveLength(1);

    // 2. b sends ann's SET again (the same bytes) and clears her sessions; killed as bob's sessions call arrives.
    const b = await start('b');
    await waitFor(() => o.sets.accepted.length === 2 && o.users.count('clear_sessions', '00uann') === 1, {
      what: "ann's SET again and her sessions cleared",
      timeoutMs: 60_000,
    });
    let bDead = false;
    o.users.beforePerform = async (_action, user, client) => {
      if (client !== 'SSWS tok-b' || user !== '00ubob') return;
      // Between the SET and the action: the org has bob's SET by now.
      await waitFor(() => o.sets.distinct === 2, { what: "bob's SET", timeoutMs: 30_000 });
      bDead = true;
      await b.kill('SIGKILL');
      return 'drop';
    };
    const bob = { id: '00ubob', login: 'bob@acme.test' };
    await appendChanges(stream, prefix, [riskChange(o.id, bob, 'none', 'high')]);
    await waitFor(() => bDead && !b.running(), { what: 'b killed at the action', timeoutMs: 60_000 });
    expect(o.users.count('clear_sessions', '00ubob')).toBe(0);

    // 3. c clears bob's sessions; ann's risk expires and a SET lowers it.
    o.users.beforePerform = null;
    const c = await start('c');
    await waitFor(() => o.users.count('clear_sessions', '00ubob') === 1, {
      what: "bob's sessions cleared",
      timeoutMs: 60_000,
    });
    await appendChanges(stream, prefix, [
      riskChange(o.id, ann, 'high', 'none', { cause: 'expiry', alert_id: annUp.alert_id }),
    ]);
    await waitFor(() => o.sets.distinct === 3, { what: "ann's risk lowered", timeoutMs: 60_000 });

    const bySubject = (email: string) =>
      o.sets.sets
        .filter((s) => (s.claims.events[USER_RISK_CHANGE]!.subject as { user: { email: string } }).user.email === email)
        .map(
          (s) =>
            `${String(s.claims.events[USER_RISK_CHANGE]!.previous_level)}→${String(s.claims.events[USER_RISK_CHANGE]!.current_level)}`,
        );
    expect(bySubject('ann@acme.test')).toEqual(['low→high', 'high→low']);
    expect(bySubject('bob@acme.test')).toEqual(['low→high']);
    expect(changedResends(o.sets)).toEqual([]);
    expect(o.sets.refused).toEqual([]);
    expect(o.users.count('clear_sessions')).toBe(2);
    expect(o.sim.violations).toEqual([]);

    // The records, as an operator reads them (through c's admin socket).
    const cliEnv = { ORG_TOKEN: 'tok-cli' };
    const listed = await waitFor(
      async () => {
        const r = await runCli(['--config', inst.configPath, 'actions', 'list', '--format', 'json'], cliEnv);
        if (r.code !== 0) throw new Error(r.stderr);
        const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
        return rows.length === 2 && rows.every((x) => x.state === 'done') ? rows : undefined;
      },
      { what: 'both actions done in the actions table', timeoutMs: 30_000 },
    );
    expect(listed.map((x) => x.user_id).sort()).toEqual(['00uann', '00ubob']);
    const bobs = listed.find((x) => x.user_id === '00ubob')!;
    expect(Number(bobs.attempts)).toBe(2);
    const delivered = await waitFor(
      async () => {
        const r = await runCli(
          [
            '--config',
            inst.configPath,
            'sql',
            'SELECT result, count() AS n FROM ssf_deliveries FINAL GROUP BY result',
            '-f',
            'json',
          ],
          cliEnv,
        );
        const rows = r.code === 0 ? (JSON.parse(r.stdout) as Array<{ result: string; n: string | number }>) : [];
        return rows.length === 1 && Number(rows[0]!.n) === 3 ? rows : undefined;
      },
      { what: 'three deliveries recorded', timeoutMs: 30_000 },
    );
    expect(delivered[0]!.result).toBe('accepted');
    await c.kill('SIGTERM');
  }, 300_000);
});
