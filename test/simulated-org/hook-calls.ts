/**
 * The calls the simulated org makes to a registered hook's endpoint, as the
 * service does (protocols.md §1, §2): the verification exchange (GET with
 * `x-okta-verification-challenge` and the configured headers, 3 s time-out,
 * one retry), deliveries and inline-hook calls (POST). Over HTTPS, trusting
 * the test's CA.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import type { Channel } from './hook-registry.js';

export const VERIFY_TIMEOUT_MS = 3_000;

export interface CallResult {
  readonly status: number;
  readonly body: string;
}

/** Why a call got no usable answer: the endpoint was unreachable, or took too long. */
export class CallFailed extends Error {
  constructor(
    readonly kind: 'unreachable' | 'timeout',
    message: string,
  ) {
    super(message);
  }
}

/** The headers the service sends to an endpoint: the auth scheme's and the custom ones. */
export function channelHeaders(channel: Channel): Record<string, string> {
  const h: Record<string, string> = {};
  for (const { key, value } of channel.config.headers) h[key.toLowerCase()] = value;
  const auth = channel.config.authScheme;
  if (auth) h[auth.key.toLowerCase()] = auth.value;
  return h;
}

export function call(
  uri: string,
  opts: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string; ca?: Buffer; timeoutMs: number },
): Promise<CallResult> {
  return new Promise((resolve, reject) => {
    const req = request(
      uri,
      {
        method: opts.method,
        headers: {
          accept: 'application/json',
          ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...opts.headers,
        },
        ...(opts.ca ? { ca: opts.ca } : {}),
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', (err) => reject(new CallFailed('unreachable', err.message)));
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      reject(new CallFailed('timeout', `no answer within ${opts.timeoutMs} ms`));
    }, opts.timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', (err: NodeJS.ErrnoException) =>
      reject(new CallFailed('unreachable', `could not reach ${uri}: ${err.code ?? err.message}`)),
    );
    req.end(opts.body);
  });
}

/**
 * The verification exchange: null when the endpoint echoed the challenge, else
 * why not (each attempt's reason, as the service's error causes give them).
 */
export async function verifyEndpoint(channel: Channel, ca: Buffer | undefined, timeoutMs = VERIFY_TIMEOUT_MS) {
  const reasons: string[] = [];
  for (let attempt = 0; attempt < 2; attempt++) {
    const challenge = randomBytes(16).toString('base64url');
    try {
      const r = await call(channel.config.uri, {
        method: 'GET',
        headers: { ...channelHeaders(channel), 'x-okta-verification-challenge': challenge },
        ...(ca ? { ca } : {}),
        timeoutMs,
      });
      if (r.status !== 200) {
        reasons.push(`The endpoint answered HTTP ${r.status} to the verification request (200 expected).`);
        continue;
      }
      let echoed: unknown;
      try {
        echoed = (JSON.parse(r.body) as { verification?: unknown }).verification;
      } catch {
        echoed = undefined;
      }
      if (echoed === challenge) return null;
      reasons.push('The endpoint answered without the verification value it was sent.');
    } catch (err) {
      const e = err as CallFailed;
      reasons.push(
        e.kind === 'timeout'
          ? `The verification request timed out after ${timeoutMs} ms.`
          : `The verification request could not be sent: ${e.message}.`,
      );
    }
  }
  return reasons;
}
