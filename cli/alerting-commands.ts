/**
 * `hooklog rules test` and `hooklog hunt` read the events in ClickHouse.
 * Embedded ClickHouse admits one process, so while `hooklog start` runs on it
 * these ask the running process through its admin socket (the routes below,
 * served by cli/start.ts), as `sql`, `query` and `status` do; otherwise they
 * open the store themselves.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from './config/schema.js';
import type { Store } from '../platform/store/index.js';
import { prepareQuery } from '../analytics/run.js';
import {
  huntIn,
  rulesTestIn,
  runHunt,
  runRulesTest,
  type HuntOptions,
  type RulesTestOptions,
  type RulesTestReport,
} from '../consumers/alerting/commands.js';
import type { ResultSet } from './format.js';
import { viaAdminSocket, type AdminRoutes } from './admin-socket.js';

const RULES_TEST = '/rules-test';
const HUNT = '/hunt';

/** A path the command was given, absolute, so the running process (another working directory) reads the same file. */
const absolute = (target: string) => (existsSync(target) ? resolve(target) : target);

/** The running process's side: rules test and hunt over its own store. */
export function alertingAdminRoutes(config: Config, store: Store): AdminRoutes {
  return {
    [RULES_TEST]: (body) => {
      const { target, options } = body as { target: string; options: RulesTestOptions };
      return rulesTestIn(store, config, target, options, undefined, prepareQuery);
    },
    [HUNT]: (body) => {
      const { file, options } = body as { file: string; options: HuntOptions };
      return huntIn(store, file, options);
    },
  };
}

/** `hooklog rules test`: through the running hooklog when it holds embedded ClickHouse, else with its own store. */
export async function rulesTestCommand(
  config: Config,
  target: string,
  options: RulesTestOptions,
  onProgress: (done: number, total: number) => void,
): Promise<RulesTestReport> {
  if (!config.store.clickhouse) {
    const viaRunning = await viaAdminSocket<RulesTestReport>(config.data_dir, RULES_TEST, {
      target: absolute(target),
      options,
    });
    if (viaRunning) return viaRunning;
  }
  return runRulesTest(config, target, options, onProgress, prepareQuery);
}

/** `hooklog hunt`: through the running hooklog when it holds embedded ClickHouse, else with its own store. */
export async function huntCommand(config: Config, file: string, options: HuntOptions): Promise<ResultSet> {
  if (!config.store.clickhouse) {
    const viaRunning = await viaAdminSocket<ResultSet>(config.data_dir, HUNT, { file: absolute(file), options });
    if (viaRunning) return viaRunning;
  }
  return runHunt(config, file, options);
}
