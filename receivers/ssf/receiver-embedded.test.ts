import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { describeSsfReceiver } from '../../test/support/ssf-receiver-suite.js';

describeSsfReceiver('embedded', () =>
  openEmbeddedStream({ dataDir: mkdtempSync(join(tmpdir(), 'hooklog-ssf-log-')), logger: silentLogger() }),
);
