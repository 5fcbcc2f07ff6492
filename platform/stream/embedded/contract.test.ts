import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { silentLogger } from '../../log.js';
import { describeStreamContract } from '../contract.js';
import { openEmbeddedStream } from './index.js';

// One data directory for the whole file: the contract's reopen test opens a
// second instance over the first one's state.
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-embedded-contract-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describeStreamContract('embedded', { open: () => openEmbeddedStream({ dataDir, logger: silentLogger() }) }, 20_000);
