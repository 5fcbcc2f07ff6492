import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../cli/config/load.js';
import { createLogger } from './log.js';

describe('logger redaction', () => {
  it('never prints secrets bound from config or headers', () => {
    let out = '';
    const sink = new Writable({ write(chunk, _enc, cb) { out += chunk.toString(); cb(); } });
    const log = createLogger({ level: 'info', destination: sink });
    const config = parseConfig({
      store: { clickhouse: { url: 'http://ch:8123', password: 'ch-password-1' } },
      event_hooks: [{ id: 'h', org: 'o', auth: { secrets: ['hook-secret-0123456789'] } }],
    }, {});
    log.info({ config }, 'config');
    log.info({ req: { headers: { authorization: 'SSWS api-token-123' } } }, 'req');
    log.info({ auth: { secrets: ['hook-secret-0123456789'] }, token: 'tok-1' }, 'direct');
    expect(out).toContain('"msg":"config"');
    for (const s of ['ch-password-1', 'hook-secret-0123456789', 'api-token-123', 'tok-1']) expect(out).not.toContain(s);
  });
});

describe('logger errors', () => {
  it('still serialises Error objects after redaction', () => {
    let out = '';
    const sink = new Writable({ write(chunk, _enc, cb) { out += chunk.toString(); cb(); } });
    createLogger({ level: 'info', destination: sink }).error({ err: new Error('boom-message') }, 'failed');
    expect(out).toContain('boom-message');
  });
});

describe('redaction of hostile keys', () => {
  it('keeps a __proto__ key as plain data instead of changing the copy\'s prototype', async () => {
    const { redactSecrets } = await import('./config/secrets.js');
    const input = JSON.parse('{"__proto__": {"secret": "s3cr3t-value", "polluted": true}, "a": 1}') as Record<string, unknown>;
    const out = redactSecrets(input) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect((out as { polluted?: boolean }).polluted).toBeUndefined();
    expect(JSON.stringify(out)).not.toContain('s3cr3t-value');
  });
});
