/**
 * vitest global set-up: builds the console's browser assets once per run, as
 * `npm run build` does, so a test that starts hooklog with the console on
 * serves what a user would get (the server refuses to start without them).
 */
import { buildConsoleAssets } from './build.js';

export default async function setup(): Promise<void> {
  await buildConsoleAssets();
}
