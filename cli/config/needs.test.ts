import { describe, expect, it } from 'vitest';
import { HooklogError } from '../../platform/errors.js';
import { parseConfig } from './load.js';
import { READS_STORE } from './needs.js';

const RAW = {
  event_hooks: [{ id: 'h1', org: 'acme', auth: { secrets: ['${HOOK_SECRET}', 'a-literal-second-secret'] } }],
  token_hooks: [{ id: 't1', org: 'acme', auth: { type: 'header', secrets: ['${TOKEN_HOOK_SECRET}'] }, rules: [] }],
  alerting: {
    webhooks: [{ name: 'chat', url: '${WEBHOOK_URL}', headers: { authorization: 'Bearer ${WEBHOOK_TOKEN}' } }],
  },
  api: { keys: ['${API_KEY}'] },
  store: { clickhouse: { url: 'http://clickhouse:8123', password: '${CH_PASSWORD}' } },
};

/** The error `fn` throws (a HooklogError), or fails. */
function errorOf(fn: () => unknown): HooklogError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HooklogError);
    return err as HooklogError;
  }
  throw new Error('it did not throw');
}

describe('what a command needs of the config (needs.ts)', () => {
  it('loads for a command reading the store without the secrets of sections it does not use', () => {
    const c = parseConfig(RAW, { CH_PASSWORD: 'the-store-password' }, {}, READS_STORE);
    expect(c.store.clickhouse?.password).toBe('the-store-password');
    // Everything but the deferred secrets reads as usual, and the rest of the shape is checked.
    expect(c.event_hooks.map((h) => [h.id, h.org, h.auth.header, h.auth.secrets.length])).toEqual([
      ['h1', 'acme', 'authorization', 2],
    ]);
    expect(c.event_hooks[0]!.auth.secrets[1]).toBe('a-literal-second-secret');
    expect(c.alerting?.webhooks[0]?.format).toBe('json');
    expect(Object.isFrozen(c.event_hooks[0]!.auth)).toBe(true);
    expect(Reflect.set(c.event_hooks[0]!.auth.secrets, 1, 'changed')).toBe(false);
    expect(
      errorOf(() =>
        parseConfig({ ...RAW, event_hooks: [{ id: 'h1', org: 'acme' }] }, { CH_PASSWORD: 'p' }, {}, READS_STORE),
      ).message,
    ).toContain('event_hooks.0.auth');
  });

  it('keeps each unresolved secret a reference: reading it fails as loading would have, naming key and variable', () => {
    const c = parseConfig(RAW, { CH_PASSWORD: 'p' }, {}, READS_STORE);
    const reads: Array<[() => unknown, string]> = [
      [
        () => c.event_hooks[0]!.auth.secrets[0],
        'config key "event_hooks.0.auth.secrets.0": environment variable HOOK_SECRET is not set',
      ],
      [() => c.event_hooks[0]!.auth.secrets.map((s) => s), 'HOOK_SECRET is not set'],
      [
        () => (c.token_hooks[0]!.auth as { secrets: string[] }).secrets[0],
        '"token_hooks.0.auth.secrets.0": environment variable TOKEN_HOOK_SECRET',
      ],
      [() => c.alerting!.webhooks[0]!.url, '"alerting.webhooks.0.url": environment variable WEBHOOK_URL is not set'],
      [() => c.alerting!.webhooks[0]!.headers.authorization, 'WEBHOOK_TOKEN is not set'],
      [() => c.api.keys[0], '"api.keys.0": environment variable API_KEY is not set'],
      [() => JSON.stringify(c), 'is not set'],
    ];
    for (const [read, message] of reads) {
      const err = errorOf(read);
      expect(err.code).toBe('CONFIG_INVALID');
      expect(err.message).toContain(message);
    }
  });

  it('still refuses, naming the variable, an unset secret of a section the command needs, and any for "all"', () => {
    expect(errorOf(() => parseConfig(RAW, {}, {}, READS_STORE)).message).toContain(
      'config key "store.clickhouse.password": environment variable CH_PASSWORD is not set',
    );
    expect(
      errorOf(() => parseConfig(RAW, { CH_PASSWORD: 'p' }, {}, ['stream', 'store', 'event_hooks'])).message,
    ).toContain('config key "event_hooks.0.auth.secrets.0": environment variable HOOK_SECRET is not set');
    expect(errorOf(() => parseConfig(RAW, { CH_PASSWORD: 'p' })).message).toContain('HOOK_SECRET is not set');
    // A non-secret value's variable is needed by every command (the shape depends on it).
    const port = { ...RAW, server: { port: '${NO_PORT}' } };
    expect(errorOf(() => parseConfig(port, { CH_PASSWORD: 'p' }, {}, READS_STORE)).message).toContain(
      'config key "server.port": environment variable NO_PORT is not set',
    );
  });

  it('resolves every secret whose variable is set, needed or not', () => {
    const env = {
      HOOK_SECRET: 'h'.repeat(16),
      TOKEN_HOOK_SECRET: 't'.repeat(16),
      WEBHOOK_URL: 'https://chat.example/hook',
      WEBHOOK_TOKEN: 'w',
      API_KEY: 'k'.repeat(24),
      CH_PASSWORD: 'p',
    };
    const c = parseConfig(RAW, env, {}, READS_STORE);
    expect(c.event_hooks[0]!.auth.secrets).toEqual(['h'.repeat(16), 'a-literal-second-secret']);
    expect(c.alerting!.webhooks[0]!.headers).toEqual({ authorization: 'Bearer w' });
    expect(JSON.stringify(c)).toContain('https://chat.example/hook');
  });
});
