/**
 * Going back (issue 38): a data directory a newer hooklog has used makes this one refuse to start, naming both
 * versions, before it writes anything; and old, new, old, new loses nothing. The newer release is simulated by
 * what it would write at its start (its data-directory marker, platform/release/data-dir-marker.ts), as no newer
 * build exists yet; the refusal and the untouched directory are this build's, run as a user runs it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { delivery, validLogEvents } from '../fixtures/index.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { waitFor } from '../support/wait.js';
import { currentRelease } from '../../platform/release/current.js';
import { DATA_DIR_MARKER, claimDataDir, readDataDirMarker } from '../../platform/release/data-dir-marker.js';
import { HOOKLOG_VERSION } from '../../platform/release/release.js';
import { openStore } from '../../platform/store/store.js';
import { silentLogger } from '../../platform/log.js';

/** Every file under `dir`: path, size, modification time and a digest of its bytes' start. */
function listing(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        out.push(`${relative(dir, p)}/`);
        walk(p);
      } else {
        const s = statSync(p);
        out.push(`${relative(dir, p)} ${s.size} ${s.mtimeMs}`);
      }
    }
  };
  walk(dir);
  return out.sort();
}

describe('going back to an older hooklog (embedded)', () => {
  let daemon: Daemon | undefined;
  afterEach(async () => {
    if (daemon) await stopDaemon(daemon);
    daemon = undefined;
  });

  it('old, new, old, new: the older start is refused with both versions and writes nothing; no event is lost', async () => {
    const inst = writeTestConfig();
    const parsed = parse(readFileSync(inst.configPath, 'utf8')) as { data_dir: string; store: { database: string } };
    const dataDir = parsed.data_dir;
    const events = validLogEvents().slice(0, 9);

    // Old: this build takes 9 events, and records itself in the directory.
    daemon = await startDaemon(['--config', inst.configPath]);
    expect(await postDelivery(daemon.url, inst.hookId, delivery(inst.org, inst.hookId, events))).toBe(204);
    const stored = async () =>
      (await queryViaAdminSocket(dataDir, `SELECT uuid FROM events FINAL WHERE org = '${inst.org}'`))?.rows ?? [];
    await waitFor(stored, { until: (rows) => rows.length >= 9, timeoutMs: 30_000, what: '9 events stored' });
    await stopDaemon(daemon);
    daemon = undefined;
    expect(readDataDirMarker(dataDir)).toMatchObject({
      newest: HOOKLOG_VERSION,
      requires: currentRelease().oldestCompatible,
    });

    // New: a later release that contracted what this one writes starts on the directory (its marker, as it writes it).
    claimDataDir(dataDir, { ...currentRelease(), version: '0.9.0', oldestCompatible: '0.9.0', schema: 900 });
    const before = listing(dataDir);
    const markerBefore = readFileSync(join(dataDir, DATA_DIR_MARKER));

    // Old again: refused, naming both versions, before anything in the directory is opened.
    const run = await runCli(['start', '--config', inst.configPath]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('RELEASE_REFUSED');
    expect(run.stderr).toContain(`was used by hooklog 0.9.0, which needs hooklog 0.9.0 or later`);
    expect(run.stderr).toContain(`this is hooklog ${HOOKLOG_VERSION}`);
    expect(listing(dataDir)).toEqual(before);
    expect(readFileSync(join(dataDir, DATA_DIR_MARKER))).toEqual(markerBefore);

    // New again: it starts (its own requirement is met) and finds every event the old release acknowledged.
    const future = { ...currentRelease(), version: '0.9.0', oldestCompatible: '0.9.0', schema: 900 };
    expect(() => claimDataDir(dataDir, future)).not.toThrow();
    const store = openStore({ database: parsed.store.database, dataDir, logger: silentLogger() });
    try {
      const rows = await store.query<{ uuid: string }>(
        `SELECT uuid FROM ${store.database}.events FINAL WHERE org = {org:String} ORDER BY uuid`,
        { org: inst.org },
      );
      expect(rows.map((r) => r.uuid)).toEqual(events.map((e) => e.uuid.toLowerCase()).sort());
    } finally {
      await store.close();
    }
  }, 180_000);
});
