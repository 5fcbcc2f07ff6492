/**
 * `kill -9` of `hooklog alert` three times while a stateful rule (impossible
 * travel, events out of order) works through the logs topic on the embedded
 * log: the per-user state and the held-back events live in the checkpoint
 * written atomically with the alerts, so afterwards the alerts topic holds
 * exactly one alert per finding. (The Kafka path of the same checkpoint is
 * killed in kill.test.ts.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { randomName } from '../../test/support/wait.js';
import { TRAVEL_RULES, travelEvents } from './testing/events.js';
import { killThriceThenDrain } from '../../test/support/alert-process.js';

const dir = mkdtempSync(join(tmpdir(), 'hooklog-alert-kill-stateful-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a stateful rule under kill -9 (embedded)', () => {
  it('three kills mid-stream: every impossible trip alerted exactly once', { timeout: 120_000 }, async () => {
    const dataDir = join(dir, 'embedded');
    const prefix = randomName('als');
    const group = randomName('alerting');
    const config = {
      data_dir: dataDir,
      log_level: 'info',
      stream: { topic_prefix: prefix, partitions: 3 },
      alerting: {
        group,
        rules: TRAVEL_RULES,
        clickhouse: false,
        max_batch_records: 10,
        max_batch_wait_ms: 20,
        allowed_lateness_ms: 7_200_000,
      },
    };
    const configPath = join(dir, `${prefix}.yaml`);
    writeFileSync(configPath, stringify(config));
    const orgs = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'wonka'];
    const { records, expectedFindings } = travelEvents(orgs, 80);
    const run = await killThriceThenDrain({ configPath, dataDir, prefix, alerting: config.alerting, records });
    expect(run.atRestart).toBeGreaterThan(0);
    expect(run.atRestart).toBeLessThan(records.length);
    expect(new Set(run.alertIds).size).toBe(expectedFindings);
    expect(run.alertIds).toHaveLength(expectedFindings);
  });
});
