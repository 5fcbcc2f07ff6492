/**
 * Sticky ownership across a fleet of real `hooklog start --roles
 * pollers,alerting` processes on the real broker, six orgs over six cursors
 * partitions (one each) and six logs partitions:
 *
 * - of three instances, stopping one (SIGTERM) moves only its own orgs and its
 *   own alerting partitions, one to each of the others; the two that stay keep
 *   every org they polled (no request of one to an org of the other) and every
 *   partition they owned, revoking nothing;
 * - a fourth instance joining takes at most its share (ceil(6/3) = 2), from the
 *   instances holding the most, and the others only give.
 *
 * Who owns what is read from each process's own log: the pollers' assignment
 * logs each change ("ownership changed": assigned, revoked), the alerting
 * consumer each generation's partitions ("kafka partitions assigned"). With
 * kafkajs's round-robin assigner both fail: any change of membership deals
 * every partition out again.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { kafkaBrokers } from '../kafka/inject.js';
import { writeTestConfig } from '../support/hooklog-config.js';
import { spawnHooklog, withOwnDataDir, type Instance } from '../support/instances.js';
import { randomName, waitFor } from '../support/wait.js';
import { orgsConfig, startOrgs, type FleetOrg } from './fleet.js';

const P = 6;
const all: Instance[] = [];
let orgs: FleetOrg[] = [];
afterAll(async () => {
  await Promise.all(all.map((i) => i.kill('SIGKILL')));
  for (const o of orgs) await o.sim.stop();
});

type Line = Record<string, unknown>;
const at = (l: Line) => Date.parse(String(l.time));

/** An instance's pollers' partitions after its log so far (or up to `until`): the changes folded in order. */
function pollerPartitions(i: Instance, group: string, until = Infinity): Set<number> {
  const held = new Set<number>();
  for (const l of i.lines())
    if (l.msg === 'ownership changed' && l.group === group && at(l) <= until) {
      for (const p of l.revoked as number[]) held.delete(p);
      for (const p of l.assigned as number[]) held.add(p);
    }
  return held;
}

/** The partitions of an instance's alerting consumer's latest generation. */
function alertingPartitions(i: Instance, group: string): Set<number> {
  const last = i
    .lines()
    .filter((l) => l.msg === 'kafka partitions assigned' && l.group === group)
    .at(-1);
  return new Set((last?.partitions as number[] | undefined) ?? []);
}

/** Each instance's partitions once the group has settled on `sizes` (each instance's count, all P covered once). */
async function settled(
  what: string,
  members: readonly Instance[],
  read: (i: Instance) => Set<number>,
  sizes: readonly number[],
): Promise<Map<string, Set<number>>> {
  const snapshot = () => new Map(members.map((i) => [i.name, read(i)]));
  return waitFor(snapshot, {
    until: (s) => {
      const sets = [...s.values()];
      const union = new Set(sets.flatMap((x) => [...x]));
      return (
        union.size === P &&
        sets.reduce((n, x) => n + x.size, 0) === P &&
        sets.every((x, k) => x.size === sizes[k]) &&
        members.every((i) => i.running())
      );
    },
    timeoutMs: 60_000,
    what,
    seen: () => Object.fromEntries([...snapshot()].map(([k, v]) => [k, [...v].sort()])),
  });
}

describe('sticky ownership in a fleet (real CLI, real broker)', () => {
  it('stopping one of three moves only its own orgs and partitions; a joiner takes at most its share', async () => {
    orgs = await startOrgs(P, P, ['tok-a', 'tok-b', 'tok-c', 'tok-d'], 50);
    const alerting = randomName('alerting');
    const inst = writeTestConfig({
      kafkaBrokers: kafkaBrokers(),
      extra: {
        roles: ['pollers', 'alerting'],
        orgs: orgsConfig(orgs),
        alerting: { group: alerting, clickhouse: false, max_batch_wait_ms: 50 },
      },
    });
    const config = parse(readFileSync(inst.configPath, 'utf8')) as {
      stream: { topic_prefix: string; partitions: number };
    };
    config.stream.partitions = P;
    writeFileSync(inst.configPath, stringify(config));
    const pollers = `${config.stream.topic_prefix}.cursors.pollers`;
    const start = async (name: string) => {
      const i = spawnHooklog(name, ['--config', withOwnDataDir(inst.configPath, name)], {
        ORG_TOKEN: `tok-${name}`,
      });
      all.push(i);
      await i.started();
      return i;
    };
    // Orgs are placed one per cursors partition (fleet.ts): org k is on partition k.
    const orgOf = (p: number) => orgs[p]!;
    const polledBy = (o: FleetOrg, name: string, since: number) =>
      o.sim.requests.some((r) => r.client === `SSWS tok-${name}` && r.at >= since);

    const a = await start('a');
    const b = await start('b');
    const c = await start('c');
    const three = [a, b, c];
    const pollersBefore = await settled(
      'the pollers of three: two partitions each',
      three,
      (i) => pollerPartitions(i, pollers),
      [2, 2, 2],
    );
    const alertingBefore = await settled(
      'alerting of three: two partitions each',
      three,
      (i) => alertingPartitions(i, alerting),
      [2, 2, 2],
    );

    // b leaves.
    const stoppedAt = Date.now();
    await b.kill('SIGTERM');
    const two = [a, c];
    const pollersAfter = await settled(
      'the pollers of a and c: three each',
      two,
      (i) => pollerPartitions(i, pollers),
      [3, 3],
    );
    const alertingAfter = await settled(
      'alerting of a and c: three each',
      two,
      (i) => alertingPartitions(i, alerting),
      [3, 3],
    );
    for (const i of two) {
      // Everything a survivor had, it still has: only b's partitions moved, one to each.
      expect
        .soft([...pollersAfter.get(i.name)!], `${i.name}'s cursors partitions`)
        .toEqual(expect.arrayContaining([...pollersBefore.get(i.name)!]));
      expect
        .soft([...alertingAfter.get(i.name)!], `${i.name}'s logs partitions`)
        .toEqual(expect.arrayContaining([...alertingBefore.get(i.name)!]));
      // ... and never gave any up on the way.
      const revoked = i
        .lines()
        .filter((l) => l.msg === 'ownership changed' && l.group === pollers && at(l) >= stoppedAt)
        .flatMap((l) => l.revoked as number[]);
      expect.soft(revoked, `cursors partitions ${i.name} revoked after b stopped`).toEqual([]);
      const generations = i
        .lines()
        .filter((l) => l.msg === 'kafka partitions assigned' && l.group === alerting && at(l) >= stoppedAt)
        .map((l) => l.partitions as number[]);
      for (const g of generations)
        expect
          .soft(g, `a generation of ${i.name}'s alerting`)
          .toEqual(expect.arrayContaining([...alertingBefore.get(i.name)!]));
    }
    // The orgs: a's are polled by a only and c's by c only since the stop; b's by whoever took its partition.
    // (Each check is soft: on failure, every way ownership moved is listed.)
    await waitFor(
      () =>
        [...pollersAfter].flatMap(([name, ps]) =>
          [...ps].filter((p) => !polledBy(orgOf(p), name, Date.now() - 1_500)).map((p) => `${orgOf(p).id}@${name}`),
        ),
      { until: (unpolled) => unpolled.length === 0, timeoutMs: 30_000, what: 'a and c polling their three orgs each' },
    );
    for (const [name, ps] of pollersBefore)
      if (name !== 'b')
        for (const p of ps)
          for (const other of ['a', 'c'].filter((x) => x !== name))
            expect
              .soft(polledBy(orgOf(p), other, stoppedAt), `${orgOf(p).id} (${name}'s) polled by ${other}`)
              .toBe(false);

    // d joins: it takes two (6 over 3), one from each of a and c (three each, the most); they only give.
    const joinedAt = Date.now();
    const d = await start('d');
    const withD = [a, c, d];
    const pollersJoined = await settled(
      'the pollers of a, c and d: two each',
      withD,
      (i) => pollerPartitions(i, pollers),
      [2, 2, 2],
    );
    const alertingJoined = await settled(
      'alerting of a, c and d: two each',
      withD,
      (i) => alertingPartitions(i, alerting),
      [2, 2, 2],
    );
    for (const i of two) {
      expect
        .soft([...pollersAfter.get(i.name)!], `${i.name}'s cursors partitions before d joined`)
        .toEqual(expect.arrayContaining([...pollersJoined.get(i.name)!]));
      expect
        .soft([...alertingAfter.get(i.name)!], `${i.name}'s logs partitions before d joined`)
        .toEqual(expect.arrayContaining([...alertingJoined.get(i.name)!]));
      const assigned = i
        .lines()
        .filter((l) => l.msg === 'ownership changed' && l.group === pollers && at(l) >= joinedAt)
        .flatMap((l) => l.assigned as number[]);
      expect.soft(assigned, `cursors partitions ${i.name} was given after d joined`).toEqual([]);
      // The orgs it kept are polled by nobody else.
      for (const p of pollersJoined.get(i.name)!)
        for (const other of ['a', 'c', 'd'].filter((x) => x !== i.name))
          expect
            .soft(polledBy(orgOf(p), other, joinedAt), `${orgOf(p).id} (${i.name}'s) polled by ${other}`)
            .toBe(false);
    }
    console.log(
      `sticky fleet: cursors ${JSON.stringify(Object.fromEntries([...pollersJoined].map(([k, v]) => [k, [...v]])))}`,
    );
  }, 240_000);
});
