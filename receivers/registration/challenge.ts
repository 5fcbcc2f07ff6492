/**
 * The verification exchange, sent by apply itself before it registers a
 * secret: a GET to the hook's URI (under `public_url`) with
 * `x-okta-verification-challenge` and the auth header carrying the secret to
 * be registered, as the service sends it (protocols.md §1). A PUT that changes
 * an event hook's channel makes the service hold it UNVERIFIED until it
 * verifies again, and deliver nothing meanwhile: when hooklog at that URI
 * does not answer with this secret (a rotation applied before the receivers
 * accept the new secret, a public_url nothing answers at), apply refuses the
 * PUT and the hook stays verified with what it has.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { SECRET_ID_HEADER, secretId, type DesiredHook } from './desired.js';

/** As the service calls: 3 s per attempt, one retry. */
export const CHALLENGE_POLICY = { timeoutMs: 3_000, attempts: 2 } as const;

export interface ChallengeOptions {
  /** CA certificate(s) to trust besides the system's (tests' own CA; a private CA in front of hooklog). */
  readonly ca?: Buffer;
  readonly timeoutMs?: number;
}

const VERIFICATION_HEADER = 'x-okta-verification-challenge';

/** Null when hooklog at `d.uri` echoes a challenge sent with `d`'s first secret; else why not, in a few words. */
export async function challengeFails(d: DesiredHook, opts: ChallengeOptions = {}): Promise<string | null> {
  let why = '';
  for (let attempt = 0; attempt < CHALLENGE_POLICY.attempts; attempt++) {
    const challenge = randomBytes(16).toString('base64url');
    const headers = {
      accept: 'application/json',
      [VERIFICATION_HEADER]: challenge,
      [d.header.toLowerCase()]: d.secrets[0]!,
      [SECRET_ID_HEADER]: secretId(d.secrets[0]!),
    };
    try {
      const r = await get(d.uri, headers, opts.ca, opts.timeoutMs ?? CHALLENGE_POLICY.timeoutMs);
      if (r.status !== 200) {
        why = `it answered HTTP ${r.status}${r.status === 401 ? ' (it does not accept that secret)' : ''}`;
        continue;
      }
      let echoed: unknown;
      try {
        echoed = (JSON.parse(r.body) as { verification?: unknown }).verification;
      } catch {
        echoed = undefined;
      }
      if (echoed === challenge) return null;
      why = 'it answered 200 without the challenge it was sent';
    } catch (err) {
      why = (err as Error).message;
    }
  }
  return why;
}

function get(
  uri: string,
  headers: Record<string, string>,
  ca: Buffer | undefined,
  timeoutMs: number,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(uri, { method: 'GET', headers, ...(ca ? { ca } : {}), agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      // An answer to a challenge is a few bytes: more is not an answer, and is not read on.
      res.on('data', (c: string) => {
        body += c;
        if (body.length > 4096) req.destroy(new Error('it answered more than 4 KiB'));
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', (err) => reject(err));
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(err.code && !err.message.includes(err.code) ? `${err.code}: ${err.message}` : err.message)),
    );
    req.end();
  });
}
