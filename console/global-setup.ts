/**
 * vitest global set-up: builds the console's browser assets once per run, as
 * `npm run build` does, so a test that starts hooklog with the console on
 * serves what a user would get (the server refuses to start without them).
 * Not under .ci/run (HOOKLOG_TEST_BUILT=1), which has just built them with
 * `npm run build` and runs the browser suite beside `npm test`: a build here
 * would rewrite the files the other suite's hooklog processes are serving.
 */
import { buildConsoleAssets } from './build.js';

export default async function setup(): Promise<void> {
  if (process.env.HOOKLOG_TEST_BUILT === '1') return;
  await buildConsoleAssets();
}
