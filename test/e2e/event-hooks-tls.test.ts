/**
 * Serving HTTPS directly (server.tls): a certificate made for this test with
 * openssl, the real CLI, deliveries over TLS. Plain HTTP on the same port gets
 * nothing, and a client that opens a connection and never starts the TLS
 * handshake is cut off like a slow-header client.
 */
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { delivery, validLogEvents } from '../fixtures/index.js';
import { TEST_SECRET, writeTestConfig, type TestInstance } from '../support/hooklog-config.js';
import { makeTestCertificate } from '../support/tls.js';
import { waitFor } from '../support/wait.js';
import { sqlRows } from './event-hooks-service.js';

const HEADERS_TIMEOUT_MS = 1500;

function tlsRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: Buffer; ca?: Buffer },
): Promise<{ status: number; body: string; protocol: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      { method: opts.method ?? 'GET', headers: opts.headers, ca: opts.ca, agent: false, timeout: 5000 },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            body,
            protocol: (res.socket as { getProtocol?: () => string }).getProtocol?.() ?? '',
          }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(opts.body);
  });
}

describe('event hooks over HTTPS served by hooklog itself', () => {
  let inst: TestInstance;
  let daemon: Daemon;
  let cert: Buffer;

  beforeAll(async () => {
    const made = makeTestCertificate();
    const { certPath, keyPath } = made;
    cert = made.cert;
    inst = writeTestConfig({
      extra: {
        server: {
          host: '127.0.0.1',
          port: 0,
          headers_timeout_ms: HEADERS_TIMEOUT_MS,
          tls: { cert_path: certPath, key_path: keyPath },
        },
      },
    });
    daemon = await startDaemon(['--config', inst.configPath]);
  }, 120_000);
  afterAll(async () => {
    if (daemon) await stopDaemon(daemon);
  });

  it('verifies and takes deliveries over TLS, and stores them', async () => {
    expect(daemon.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const url = `${daemon.url}/hooks/events/${inst.hookId}`;
    const verify = await tlsRequest(url, {
      ca: cert,
      headers: { authorization: TEST_SECRET, 'x-okta-verification-challenge': 'tls-1' },
    });
    expect(verify).toMatchObject({ status: 200, body: '{"verification":"tls-1"}' });
    expect(verify.protocol).toMatch(/^TLSv1\.[23]$/);
    const events = validLogEvents().slice(0, 3);
    const body = Buffer.from(JSON.stringify(delivery(inst.org, inst.hookId, events)));
    const res = await tlsRequest(url, {
      method: 'POST',
      ca: cert,
      body,
      headers: { authorization: TEST_SECRET, 'content-type': 'application/json' },
    });
    expect(res.status).toBe(204);
    const rows = await waitFor(
      async () => {
        const r = await sqlRows(inst, `SELECT raw FROM events FINAL WHERE org = '${inst.org}' ORDER BY uuid`);
        return r;
      },
      { until: (found) => found.length === 3, what: 'three events' },
    );
    expect(rows.map((r) => JSON.parse(String(r.raw)))).toEqual(
      [...events].sort((a, b) => a.uuid.localeCompare(b.uuid)),
    );
  });

  it('is really TLS: an untrusted certificate is refused by the client, and plain HTTP gets no answer', async () => {
    await expect(tlsRequest(`${daemon.url}/healthz`, {})).rejects.toThrow(/self-signed|self signed/);
    const plain = daemon.url.replace('https:', 'http:');
    await expect(
      new Promise((resolve, reject) => {
        const req = httpRequest(`${plain}/healthz`, { agent: false, timeout: 5000 }, (res) => resolve(res.statusCode));
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', reject);
        req.end();
      }),
    ).rejects.toThrow();
    expect((await tlsRequest(`${daemon.url}/healthz`, { ca: cert })).status).toBe(200);
  });

  it('cuts off a client that never starts the TLS handshake', async () => {
    const { port } = new URL(daemon.url);
    const closedAfterMs = await new Promise<number>((resolve, reject) => {
      const t0 = performance.now();
      const s = connect(Number(port), '127.0.0.1');
      s.on('close', () => resolve(performance.now() - t0));
      s.on('error', () => undefined);
      setTimeout(() => reject(new Error('not cut off within 15 s')), 15_000).unref();
    });
    expect(closedAfterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    expect(closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 3000);
    expect((await tlsRequest(`${daemon.url}/healthz`, { ca: cert })).status).toBe(200);
  });
});
