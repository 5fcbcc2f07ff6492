import type { IncomingMessage } from 'node:http';
import { HooklogError } from '../platform/errors.js';

/**
 * Reads a request body up to `limit` bytes. Past the limit the read stops and
 * the caller answers 413; the raw bytes are kept because rejected input goes
 * to the dead-letter topic exactly as it arrived.
 */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limit) {
      req.resume();
      throw tooLarge(limit);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks, size);
}

function tooLarge(limit: number): HooklogError {
  return new HooklogError('RECORD_INVALID', `body exceeds ${limit} bytes`, { cause: 'too-large' });
}

export function isTooLarge(err: unknown): boolean {
  return err instanceof HooklogError && err.cause === 'too-large';
}
