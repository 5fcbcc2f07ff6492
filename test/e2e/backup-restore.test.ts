/**
 * `hooklog backup` and `hooklog restore` on the embedded default, with the real CLI (built, under
 * HOOKLOG_CLI=built): a backup taken through the running hooklog while hooks arrive and the pollers catch up with
 * the simulated org, restored into a fresh data directory and started there, must answer the same queries, and its
 * pollers must go on from the cursors the backup saved, fetching each of the org's later events once. A backup of a
 * stopped instance restores to exactly what it held. A restore refuses a non-empty directory, a changed file and a
 * newer format, writing nothing.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { delivery } from '../fixtures/index.js';
import { history, logEvent, SimulatedOrg, type RequestRecord } from '../simulated-org/index.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { waitFor } from '../support/wait.js';

interface Instance {
  readonly configPath: string;
  readonly dataDir: string;
}

/** The same config on another data directory: what an operator restoring onto a new machine writes. */
function sameConfigElsewhere(from: string): Instance {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-restore-'));
  const cfg = parse(readFileSync(from, 'utf8')) as { data_dir: string };
  cfg.data_dir = join(dir, 'data');
  const configPath = join(dir, 'hooklog.yaml');
  writeFileSync(configPath, stringify(cfg));
  return { configPath, dataDir: cfg.data_dir };
}

/** The seq of the last event before a System Log polling request's `after` cursor (`<persistedAt>_<seq>`). */
function afterSeq(r: RequestRecord): number {
  const m = /^\d+_(\d+)$/.exec(r.params.after ?? '');
  return m ? Number(m[1]) : -1;
}

describe('backup and restore (embedded, real CLI)', () => {
  let sim: SimulatedOrg | undefined;
  const daemons: Daemon[] = [];
  let live: NodeJS.Timeout | undefined;
  afterAll(async () => {
    clearInterval(live);
    for (const d of daemons) await stopDaemon(d);
    await sim?.stop();
  });

  it('a backup under hook load and polling restores to the same answers; pollers resume from its cursors, fetching each later event once', async () => {
    sim = await SimulatedOrg.start({ rateLimit: { logs: { limit: 40, windowMs: 1000 } } });
    const now = Date.now();
    sim.addLogEvents(history({ count: 20_000, days: 2, now, kind: 'log', seed: 7 }));
    const simOrg = `sim-${Math.random().toString(36).slice(2, 8)}`;
    const a = writeTestConfig({
      extra: {
        orgs: [
          {
            id: simOrg,
            base_url: sim.url,
            auth: { ssws: { token: 'sim-token' } },
            system_log: { start: '3d', poll_interval_ms: 150, rate_limit_share: 0.5 },
          },
        ],
      },
    });
    const aData = (parse(readFileSync(a.configPath, 'utf8')) as { data_dir: string }).data_dir;
    const ask = async (dataDir: string, sql: string) => (await queryViaAdminSocket(dataDir, sql))?.rows ?? [];
    const count = async (dataDir: string, sql: string) => Number((await ask(dataDir, sql))[0]?.n ?? -1);
    const polledCount = (dataDir: string) => count(dataDir, `SELECT count() AS n FROM events WHERE org = '${simOrg}'`);
    /** What an analyst would ask of the polled org: every event once, by type and time. */
    const answers = async (dataDir: string) => ({
      byType: await ask(
        dataDir,
        `SELECT event_type, count() AS n, min(published) AS first, max(published) AS last FROM events WHERE org = '${simOrg}' GROUP BY event_type ORDER BY event_type`,
      ),
      uuids: (await ask(dataDir, `SELECT uuid FROM events WHERE org = '${simOrg}' ORDER BY uuid`)).map((r) => r.uuid),
      distinct: await count(dataDir, `SELECT uniqExact(uuid) AS n FROM events WHERE org = '${simOrg}'`),
    });

    const first = await startDaemon(['--config', a.configPath]);
    daemons.push(first);
    // Live arrivals at the org, and hook deliveries to hooklog, all through the backup.
    let n = 0;
    live = setInterval(() => {
      const t = Date.now();
      sim!.addLogEvents(Array.from({ length: 4 }, () => ({ event: logEvent(n++), published: t - 500 })));
    }, 100);
    const acked: Array<{ uuid: string; at: number }> = [];
    // Every uuid sent: a delivery the sender gave up on (3 s) may still have been stored, as with the service.
    const sent = new Set<string>();
    const answered: Array<{ at: number; ms: number; status: number }> = [];
    let hooking = true;
    const hookLoad = (async () => {
      for (let i = 0; hooking; i++) {
        const events = Array.from({ length: 10 }, (_, j) => logEvent(i * 10 + j));
        for (const e of events) sent.add(String(e.uuid));
        const t0 = Date.now();
        const status = await postDelivery(first.url, a.hookId, delivery(a.org, a.hookId, events)).catch(() => 0);
        const at = Date.now();
        answered.push({ at, ms: at - t0, status });
        if (status === 204) for (const e of events) acked.push({ uuid: String(e.uuid), at });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    // Mid catch-up: the pollers have stored pages and cursors, and more are coming.
    await waitFor(() => polledCount(aData), {
      until: (c) => c >= 1_500,
      what: 'the first 1,500 polled events in ClickHouse',
      timeoutMs: 120_000,
      intervalMs: 250,
    });
    const backupStarted = Date.now();
    const savedBefore = Math.max(
      ...sim.requests.filter((r) => r.path === '/api/v1/logs' && r.at < backupStarted).map(afterSeq),
    );
    const backupDir = join(mkdtempSync(join(tmpdir(), 'hooklog-backup-')), 'b1');
    const backup = await runCli(['backup', backupDir, '--config', a.configPath]);
    expect(backup.stderr).not.toMatch(/BACKUP_|error/i);
    expect(backup.code, `${backup.stdout}\n${backup.stderr}`).toBe(0);
    expect(backup.stdout).toContain(`backup written to ${backupDir}`);
    const backupEnded = Date.now();
    const during = answered.filter((x) => x.at >= backupStarted && x.at - x.ms <= backupEnded);
    process.stderr.write(
      `backup took ${backupEnded - backupStarted} ms; hook deliveries meanwhile: ${during.length}, statuses ${JSON.stringify(
        Object.fromEntries(
          [...new Set(during.map((x) => x.status))].map((st) => [st, during.filter((x) => x.status === st).length]),
        ),
      )}, slowest ${Math.max(0, ...during.map((x) => x.ms))} ms\n`,
    );
    // Hooks are answered throughout: the backup holds only the writes to ClickHouse.
    expect(during.filter((x) => x.status === 204).length).toBeGreaterThan(0);
    const ackedBeforeBackup = acked.filter((x) => x.at < backupStarted).map((x) => x.uuid);
    expect(ackedBeforeBackup.length).toBeGreaterThan(0);

    // Load goes on a little after the backup, then the org quietens and the first instance catches up and stops.
    await waitFor(() => acked.filter((x) => x.at > Date.now() - 1_000).length, {
      until: (k) => k > 0,
      what: 'hook deliveries acknowledged after the backup',
    });
    hooking = false;
    await hookLoad;
    clearInterval(live);
    const retained = sim.retained(sim.logs).length;
    await waitFor(() => polledCount(aData), {
      until: (c) => c === retained,
      what: `all ${retained} of the org's events in the first instance`,
      timeoutMs: 180_000,
      intervalMs: 500,
    });
    const before = await answers(aData);
    expect(before.distinct).toBe(retained);
    await stopDaemon(first);

    // Restore onto a new data directory, and start there.
    const b = sameConfigElsewhere(a.configPath);
    const restore = await runCli(['restore', backupDir, '--config', b.configPath]);
    expect(restore.stderr).toBe('');
    expect(restore.code).toBe(0);
    const again = await runCli(['restore', backupDir, '--config', b.configPath]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('BACKUP_REFUSED');
    const fromRequest = sim.requests.length;
    const second = await startDaemon(['--config', b.configPath]);
    daemons.push(second);
    await waitFor(() => polledCount(b.dataDir), {
      until: (c) => c === retained,
      what: `all ${retained} of the org's events in the restored instance`,
      timeoutMs: 180_000,
      intervalMs: 500,
    });
    // 0 lost, 0 duplicated: the same answers as the instance the backup was taken of.
    expect(await answers(b.dataDir)).toEqual(before);
    // Every hook delivery acknowledged before the backup began is there; nothing that was never acknowledged is.
    const hookUuids = new Set(
      (await ask(b.dataDir, `SELECT uuid FROM events WHERE org = '${a.org}'`)).map((r) => String(r.uuid)),
    );
    expect(ackedBeforeBackup.filter((u) => !hookUuids.has(u))).toEqual([]);
    expect([...hookUuids].filter((u) => !sent.has(u))).toEqual([]);
    expect(await count(b.dataDir, `SELECT count() AS n FROM events WHERE org = '${a.org}'`)).toBe(hookUuids.size);

    // The restored pollers went on from a cursor the backup saved (at or past every page stored before it began),
    // and each later event was fetched once: polling positions only move forward.
    const polls = sim.requests.slice(fromRequest).filter((r) => r.path === '/api/v1/logs' && r.status === 200);
    expect(polls.length).toBeGreaterThan(0);
    expect(polls[0]!.params.after).toBeDefined();
    expect(afterSeq(polls[0]!)).toBeGreaterThanOrEqual(savedBefore);
    const seqs = polls.map(afterSeq);
    expect(seqs.filter((s, i) => i > 0 && s < seqs[i - 1]!)).toEqual([]);
    expect(sim.violations).toEqual([]);
    const lastCursor = polls.at(-1)!.params.after;

    // A backup of the stopped instance restores to exactly what it held, and polling resumes at its last cursor.
    const held = await answers(b.dataDir);
    const heldHooks = [...hookUuids].sort();
    await stopDaemon(second);
    const stoppedDir = join(mkdtempSync(join(tmpdir(), 'hooklog-backup-')), 'b2');
    const stopped = await runCli(['backup', stoppedDir, '--config', b.configPath]);
    expect(stopped.code).toBe(0);
    const c = sameConfigElsewhere(a.configPath);
    expect((await runCli(['restore', stoppedDir, '--config', c.configPath])).code).toBe(0);
    const fromThird = sim.requests.length;
    const third = await startDaemon(['--config', c.configPath]);
    daemons.push(third);
    const resumed = await waitFor(
      () => sim!.requests.slice(fromThird).find((r) => r.path === '/api/v1/logs' && r.status === 200),
      { what: "the restored stopped instance's first poll", timeoutMs: 60_000 },
    );
    expect(resumed.params.after).toBe(lastCursor);
    expect(await answers(c.dataDir)).toEqual(held);
    expect(
      (await ask(c.dataDir, `SELECT uuid FROM events WHERE org = '${a.org}' ORDER BY uuid`)).map((r) => r.uuid),
    ).toEqual(heldHooks);
    await stopDaemon(third);

    // Refusals, each before anything is written: a changed file, a newer format, a newer schema.
    const refused = async (mutate: (dir: string) => void, code: string) => {
      const copy = join(mkdtempSync(join(tmpdir(), 'hooklog-backup-')), 'copy');
      cpSync(stoppedDir, copy, { recursive: true });
      mutate(copy);
      const d = sameConfigElsewhere(a.configPath);
      const r = await runCli(['restore', copy, '--config', d.configPath]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(code);
      expect(existsSync(d.dataDir) ? readdirSync(d.dataDir) : []).toEqual([]);
      return r.stderr;
    };
    const manifestOf = (dir: string) =>
      JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    await refused((dir) => {
      const seg = join(dir, 'stream', readdirSync(join(dir, 'stream'))[0]!);
      const bytes = readFileSync(seg);
      bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
      writeFileSync(seg, bytes);
    }, 'BACKUP_INVALID');
    expect(
      await refused(
        (dir) => writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ ...manifestOf(dir), format: 2 })),
        'BACKUP_FORMAT_UNSUPPORTED',
      ),
    ).toMatch(/format 2/);
    expect(
      await refused(
        (dir) => writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ ...manifestOf(dir), schema_version: 999 })),
        'BACKUP_FORMAT_UNSUPPORTED',
      ),
    ).toMatch(/schema 999/);
    await refused((dir) => writeFileSync(join(dir, 'manifest.json'), '{'), 'BACKUP_INVALID');
  }, 900_000);
});
