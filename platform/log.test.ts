import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../cli/config/load.js';
import { createLogger, resolveLogFormat } from './log.js';

describe('logger redaction', () => {
  it('never prints secrets bound from config or headers', () => {
    let out = '';
    const sink = new Writable({
      write(chunk, _enc, cb) {
        out += chunk.toString();
        cb();
      },
    });
    const log = createLogger({ level: 'info', destination: sink });
    const config = parseConfig(
      {
        store: { clickhouse: { url: 'http://ch:8123', password: 'ch-password-1' } },
        event_hooks: [{ id: 'h', org: 'o', auth: { secrets: ['hook-secret-0123456789'] } }],
      },
      {},
    );
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
    const sink = new Writable({
      write(chunk, _enc, cb) {
        out += chunk.toString();
        cb();
      },
    });
    createLogger({ level: 'info', destination: sink }).error({ err: new Error('boom-message') }, 'failed');
    expect(out).toContain('boom-message');
  });
});

describe('redaction of hostile keys', () => {
  it("keeps a __proto__ key as plain data instead of changing the copy's prototype", async () => {
    const { redactSecrets } = await import('./config/secrets.js');
    const input = JSON.parse('{"__proto__": {"secret": "s3cr3t-value", "polluted": true}, "a": 1}') as Record<
      string,
      unknown
    >;
    const out = redactSecrets(input) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect((out as { polluted?: boolean }).polluted).toBeUndefined();
    expect(JSON.stringify(out)).not.toContain('s3cr3t-value');
  });
});

describe('the err serializer', () => {
  it("keeps HooklogError's code and retriable flag and the cause chain, each cause with its own code", async () => {
    const { HooklogError } = await import('./errors.js');
    let out = '';
    const sink = new Writable({
      write(chunk, _enc, cb) {
        out += chunk.toString();
        cb();
      },
    });
    const driver = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' });
    const store = new HooklogError('STORE_UNAVAILABLE', 'insert failed', { retriable: true, cause: driver });
    createLogger({ level: 'info', destination: sink }).warn(
      { err: new HooklogError('INTERNAL', 'batch failed', { cause: store }) },
      'failed',
    );
    const err = (JSON.parse(out) as { err: Record<string, unknown> }).err;
    expect(err).toMatchObject({ type: 'HooklogError', message: 'batch failed', code: 'INTERNAL', retriable: false });
    expect(err.stack).toMatch(/^HooklogError: batch failed/);
    expect(err.cause).toMatchObject({
      type: 'HooklogError',
      message: 'insert failed',
      code: 'STORE_UNAVAILABLE',
      retriable: true,
    });
    expect((err.cause as Record<string, unknown>).cause).toMatchObject({
      type: 'Error',
      message: 'connect ECONNREFUSED 127.0.0.1:8123',
      code: 'ECONNREFUSED',
    });
  });
});

describe('log format', () => {
  const capture = (isTTY?: boolean) => {
    const sink = Object.assign(
      new Writable({
        write(chunk, _enc, cb) {
          sink.out += chunk.toString();
          cb();
        },
      }),
      { out: '' },
      isTTY === undefined ? {} : { isTTY },
    );
    return sink;
  };
  const secrets = (log: ReturnType<typeof createLogger>) => {
    log.info(
      {
        auth: { secrets: ['hook-secret-0123456789'] },
        token: 'tok-1',
        req: { headers: { authorization: 'SSWS api-token-123' } },
      },
      'hook ready',
    );
  };

  it('pretty: readable lines (level name, message, fields), not JSON, secrets still redacted', () => {
    const sink = capture();
    secrets(createLogger({ level: 'info', destination: sink, format: 'pretty' }));
    expect(sink.out).toMatch(/INFO.*hook ready/);
    expect(sink.out).toMatch(/token: "\[redacted\]"|token: \[redacted\]/i);
    expect(() => JSON.parse(sink.out.split('\n')[0]!)).toThrow();
    for (const s of ['hook-secret-0123456789', 'api-token-123', 'tok-1']) expect(sink.out).not.toContain(s);
  });

  it('json: one JSON object per line, secrets redacted', () => {
    const sink = capture(true);
    secrets(createLogger({ level: 'info', destination: sink, format: 'json' }));
    expect(JSON.parse(sink.out.trim())).toMatchObject({ msg: 'hook ready', level: 30 });
    for (const s of ['hook-secret-0123456789', 'api-token-123', 'tok-1']) expect(sink.out).not.toContain(s);
  });

  it('auto (the default): pretty on a terminal, JSON lines on a pipe or file', () => {
    expect(resolveLogFormat('auto', capture(true))).toBe('pretty');
    expect(resolveLogFormat('auto', capture(false))).toBe('json');
    expect(resolveLogFormat('auto', capture())).toBe('json');
    const tty = capture(true);
    createLogger({ level: 'info', destination: tty }).info('on a terminal');
    expect(tty.out).toMatch(/INFO.*on a terminal/);
    const pipe = capture();
    createLogger({ level: 'info', destination: pipe }).info('on a pipe');
    expect(JSON.parse(pipe.out.trim())).toMatchObject({ msg: 'on a pipe' });
    expect(parseConfig({}, {}).log.format).toBe('auto');
    expect(parseConfig({ log: { format: 'json' } }, {}).log.format).toBe('json');
    expect(() => parseConfig({ log: { format: 'xml' } }, {})).toThrow(/log\.format/);
  });
});
