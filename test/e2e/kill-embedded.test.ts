/**
 * `kill -9` of hooklog immediately after a 204 (embedded mode): the events were
 * fsynced before the answer, so the restarted process must sink them all.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { delivery, validLogEvents } from '../fixtures/index.js';
import { startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { waitFor } from '../support/wait.js';

describe('kill -9 after acknowledgement (embedded)', () => {
  let daemon: Daemon | undefined;
  afterEach(async () => {
    if (daemon) await stopDaemon(daemon);
  });

  it('loses none of the acknowledged events across three kills', async () => {
    // A long batch wait keeps acknowledged events in the stream, not yet in ClickHouse, when the kill lands.
    const inst = writeTestConfig({ extra: { sink: { max_batch_wait_ms: 5000 } } });
    const dataDir = (parse(readFileSync(inst.configPath, 'utf8')) as { data_dir: string }).data_dir;
    const events = validLogEvents();
    const acked: string[] = [];
    for (let round = 0; round < 3; round++) {
      daemon = await startDaemon(['--config', inst.configPath]);
      const batch = events.slice(round * 40, round * 40 + 40);
      expect(await postDelivery(daemon.url, inst.hookId, delivery(inst.org, inst.hookId, batch))).toBe(204);
      daemon.child.kill('SIGKILL');
      await new Promise((r) => daemon!.child.once('exit', r));
      acked.push(...batch.map((e) => e.uuid));
    }
    daemon = await startDaemon(['--config', inst.configPath]);
    const rows = await waitFor(
      async () => {
        const rs = await queryViaAdminSocket(dataDir, `SELECT uuid FROM events FINAL WHERE org = '${inst.org}'`);
        return rs?.rows ?? [];
      },
      {
        until: (found) => found.length >= acked.length,
        timeoutMs: 30_000,
        what: `${acked.length} acknowledged events after restart`,
      },
    );
    expect(rows.map((r) => r.uuid).sort()).toEqual([...acked].sort());
  }, 180_000);
});
