/**
 * A certificate for 127.0.0.1 made for one test with openssl: hooklog serves
 * HTTPS with it (`server.tls`), and the simulated org trusts it as its CA when
 * it calls hooklog's endpoints (the service only calls https URIs).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificate {
  readonly certPath: string;
  readonly keyPath: string;
  /** The certificate itself: what a client trusts. */
  readonly cert: Buffer;
}

export function makeTestCertificate(): TestCertificate {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-cert-'));
  const [certPath, keyPath] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      keyPath,
      '-out',
      certPath,
    ],
    { stdio: 'ignore' },
  );
  return { certPath, keyPath, cert: readFileSync(certPath) };
}
