/**
 * The revocation view on the real embedded stream: a session's revocation ends
 * that session only; a user's ends the sessions begun up to it (by login or
 * subject), not later ones; a process that starts later learns the revocations
 * in force from the compacted topic; and revocations past their expiry are
 * tombstoned, so the topic and the view stay one session lifetime deep.
 */
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../platform/log.js';
import { openEmbeddedStream } from '../platform/stream/embedded/index.js';
import { freshDir } from '../platform/stream/embedded/testing.js';
import { waitFor } from '../test/support/wait.js';
import {
  consoleSessionsTopic,
  revocationRecord,
  RevocationView,
  sessionRevocation,
  userRevocation,
} from './revocations.js';
import type { Session } from './session.js';

const dataDir = freshDir();
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const T0 = Date.parse('2026-11-29T00:00:00Z');
const session = (sid: string, name: string, signedInAtMs: number): Session => ({
  principal: { kind: 'user', id: `00u-${name}`, name, orgs: ['org-a'], role: 'analyst' },
  sid,
  expiresAt: Math.floor(signedInAtMs / 1000) + 3600,
  signedInAtMs,
  grantedAtMs: signedInAtMs,
});

describe('revocation view', () => {
  it('ends what each revocation names, learns them from the topic after a restart, and tombstones the expired', async () => {
    const topic = consoleSessionsTopic('t');
    const a1 = session('s-a1', 'alice@a.example', T0);
    const a2 = session('s-a2', 'alice@a.example', T0 + 1000);
    const b = session('s-b', 'bob@b.example', T0);
    let stream = await openEmbeddedStream({ dataDir, logger: silentLogger() });
    await stream.ensureTopics([{ name: topic, partitions: 2, compacted: true }]);
    const view = new RevocationView(silentLogger());
    await view.start(stream, topic, () => T0);
    expect(view.revokedBy(a1, T0)).toBeUndefined();

    // One session signed out: that session only.
    await stream.append(topic, [revocationRecord(sessionRevocation(a1, 'signed_out', a1.principal.id, T0 + 10))]);
    await waitFor(() => view.revokedBy(a1, T0 + 20), { until: (r) => r === 'signed_out', what: 'a1 revoked' });
    expect(view.revokedBy(a2, T0 + 20)).toBeUndefined();

    // Every session of bob begun up to the revocation, matched by login; a later sign-in holds.
    await stream.append(topic, [revocationRecord(userRevocation('bob@b.example', 'lead', 60, T0 + 500))]);
    await waitFor(() => view.revokedBy(b, T0 + 600), { until: (r) => r === 'revoked', what: 'bob revoked' });
    expect(view.revokedBy(session('s-b2', 'bob@b.example', T0 + 501), T0 + 600)).toBeUndefined();
    // By subject too; and once the revocation is past its expiry it no longer matters.
    await stream.append(topic, [revocationRecord(userRevocation('00u-alice@a.example', 'lead', 1, T0 + 2000))]);
    await waitFor(() => view.revokedBy(a2, T0 + 2100), { until: (r) => r === 'revoked', what: 'a2 revoked' });
    expect(view.revokedBy(a2, T0 + 2000 + 60_000)).toBeUndefined();
    view.stop();
    await stream.close();

    // A process starting later reads every revocation still in force before it serves.
    stream = await openEmbeddedStream({ dataDir, logger: silentLogger() });
    const later = new RevocationView(silentLogger());
    await later.start(stream, topic, () => T0 + 3000);
    expect(later.size).toBe(3);
    expect([later.revokedBy(a1, T0 + 3000), later.revokedBy(b, T0 + 3000), later.revokedBy(a2, T0 + 3000)]).toEqual([
      'signed_out',
      'revoked',
      'revoked',
    ]);

    // Past alice's user revocation (1 min) and before the others' (1 h): only it is tombstoned and forgotten.
    expect(await later.sweep(stream, topic, T0 + 2000 + 60_000)).toBe(1);
    await waitFor(() => later.size, { until: (n) => n === 2, what: 'the view without the tombstoned revocation' });
    // Past every one: all tombstoned (the latest record of every key is one, which compaction then drops).
    expect(await later.sweep(stream, topic, T0 + 2 * 3600_000)).toBe(2);
    await waitFor(() => later.size, { until: (n) => n === 0, what: 'the view after every tombstone' });
    const latest = [...(await stream.readLatestByKey(topic)).values()];
    expect(latest.map((r) => r.value.length)).toEqual([0, 0, 0]);
    later.stop();
    await stream.close();
  });

  it('holds a revocation this process appended at once, until its record is read', () => {
    const view = new RevocationView(silentLogger());
    const s = session('s-x', 'carol@a.example', T0);
    view.add(sessionRevocation(s, 'signed_out', s.principal.id, T0 + 1));
    expect(view.revokedBy(s, T0 + 2)).toBe('signed_out');
    view.add(userRevocation('dave@a.example', 'lead', 60, T0 + 5));
    expect(view.revokedBy(session('s-y', 'dave@a.example', T0), T0 + 6)).toBe('revoked');
  });
});
