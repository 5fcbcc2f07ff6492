import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { HooklogError } from '../../platform/errors.js';
import { defaultConfig, interpolateEnv, loadConfig, parseConfig } from './load.js';
import { configJsonSchema, configSchema } from './schema.js';
import { REDACTED, SECRET_KEYS, redactConfig, redactSecrets, type SchemaNode } from '../../platform/config/secrets.js';

const hook = (over: Record<string, unknown> = {}) => ({
  id: 'h1',
  org: 'acme',
  auth: { secrets: ['0123456789abcdef'] },
  ...over,
});

function expectConfigError(raw: unknown, ...fragments: string[]) {
  let message = '';
  try {
    parseConfig(raw, {});
  } catch (err) {
    expect(err).toBeInstanceOf(HooklogError);
    expect((err as HooklogError).code).toBe('CONFIG_INVALID');
    message = (err as Error).message;
  }
  for (const f of fragments) expect(message).toContain(f);
}

describe('config', () => {
  it('fills every default and freezes the result', () => {
    const c = parseConfig({}, {});
    expect(c.server.port).toBe(8080);
    expect(c.data_dir).toBe('./data');
    expect(c.stream.kafka).toBeUndefined();
    expect(c.store.clickhouse).toBeUndefined();
    expect(c.sink.max_batch_wait_ms).toBe(1000);
    expect(Object.isFrozen(c.server)).toBe(true);
  });

  it('rejects unknown keys, naming them and where they are', () => {
    expectConfigError({ server: { prot: 80 } }, 'config key "server"', '"prot"');
    expectConfigError({ sevrer: {} }, '"sevrer"');
    expectConfigError({ event_hooks: [hook({ secret: 'x' })] }, 'event_hooks.0', '"secret"');
  });

  it('names the key and the problem for wrong values', () => {
    expectConfigError({ server: { port: 'eighty' } }, 'server.port', 'expected number');
    expectConfigError({ server: { ack_timeout_ms: 5000 } }, 'server.ack_timeout_ms');
    expectConfigError({ stream: { kafka: { brokers: ['no-port'] } } }, 'stream.kafka.brokers.0', 'host:port');
    expectConfigError({ store: { database: 'drop table;' } }, 'store.database');
    expectConfigError(
      { event_hooks: [hook({ auth: { secrets: ['short'] } })] },
      'event_hooks.0.auth.secrets.0',
      '16 characters',
    );
    expectConfigError({ event_hooks: [hook(), hook()] }, 'event_hooks.1.id', 'duplicate hook id "h1"');
  });

  it('interpolates ${ENV} in values, with fallbacks, and names the key of a missing variable', () => {
    expect(interpolateEnv({ a: ['x${A}y', '${B:-dflt}'] }, { A: '1' })).toEqual({ a: ['x1y', 'dflt'] });
    const c = parseConfig(
      { event_hooks: [hook({ auth: { secrets: ['${HOOK_SECRET}'] } })] },
      { HOOK_SECRET: 'from-the-environment-123' },
    );
    expect(c.event_hooks[0]!.auth.secrets).toEqual(['from-the-environment-123']);
    expect(() => parseConfig({ event_hooks: [hook({ auth: { secrets: ['${NOPE}'] } })] }, {})).toThrow(
      /event_hooks\.0\.auth\.secrets\.0.*NOPE is not set/,
    );
  });

  it('types values from the environment by the schema: numbers and booleans where the key needs one, text elsewhere', () => {
    const c = parseConfig(
      {
        server: { port: '${PORT}', trust_proxy: '${TRUST:-false}', host: '${HOST}' },
        stream: { partitions: '${PARTS:-4}' },
        event_hooks: [hook({ auth: { secrets: ['${DIGITS}'] } })],
      },
      { PORT: '8081', HOST: '127.0.0.1', TRUST: 'TRUE', DIGITS: '1234567890123456' },
    );
    expect(c.server.port).toBe(8081);
    expect(c.server.trust_proxy).toBe(true);
    expect(c.server.host).toBe('127.0.0.1');
    expect(c.stream.partitions).toBe(4);
    // A secret of digits stays text: the schema wants a string there.
    expect(c.event_hooks[0]!.auth.secrets).toEqual(['1234567890123456']);
    // What the environment gives must still read as the type, and pass the key's own rules.
    expect(() => parseConfig({ server: { port: '${PORT}' } }, { PORT: 'eighty' })).toThrow(
      /server\.port": expected number, the environment gave "eighty"/,
    );
    expect(() => parseConfig({ server: { port: '${PORT}' } }, { PORT: '70000' })).toThrow(/server\.port/);
    expect(() => parseConfig({ server: { trust_proxy: '${T}' } }, { T: 'yes' })).toThrow(/server\.trust_proxy/);
    // Text written in the file is the user's string, never converted; nor is a placeholder inside other text.
    expect(() => parseConfig({ server: { port: '8080' } }, {})).toThrow(/server\.port.*expected number/);
    expect(() => parseConfig({ server: { port: '80${P}' } }, { P: '80' })).toThrow(/server\.port/);
  });

  it('takes server.port and instance_id per process: a flag, else HOOKLOG_PORT / HOOKLOG_INSTANCE_ID, over the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hooklog-cfg-'));
    const file = join(dir, 'shared.yaml');
    writeFileSync(file, 'instance_id: from-file\nserver:\n  host: 127.0.0.1\n  port: ${PORT:-8080}\n');
    expect(loadConfig(file, {}).config.server).toMatchObject({ port: 8080, host: '127.0.0.1' });
    expect(loadConfig(file, { PORT: '8082' }).config.server.port).toBe(8082);
    const env = { PORT: '8082', HOOKLOG_PORT: '8083', HOOKLOG_INSTANCE_ID: 'env-b' };
    expect(loadConfig(file, env).config).toMatchObject({ instance_id: 'env-b', server: { port: 8083 } });
    expect(loadConfig(file, env, { port: '8084', instanceId: 'flag-c' }).config).toMatchObject({
      instance_id: 'flag-c',
      server: { port: 8084, host: '127.0.0.1' },
    });
    expect(() => loadConfig(file, {}, { port: 'x' })).toThrow(/server\.port": expected number/);
    expect(() => loadConfig(file, {}, { instanceId: 'a b' })).toThrow(/instance_id/);
    // The built-in default takes them too.
    expect(defaultConfig({}, { port: '9001' }).config.server.port).toBe(9001);
  });

  it('runs the documented default without a file: embedded, port 8080, one demo hook', () => {
    const generated = defaultConfig({});
    expect(generated.config.event_hooks.map((h) => h.id)).toEqual(['demo']);
    expect(generated.generatedDemoSecret).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(generated.config.event_hooks[0]!.auth.secrets).toEqual([generated.generatedDemoSecret]);
    const chosen = defaultConfig({ HOOKLOG_DEMO_SECRET: 'my-demo-secret-0123' });
    expect(chosen.generatedDemoSecret).toBeUndefined();
    expect(chosen.config.event_hooks[0]!.auth.secrets).toEqual(['my-demo-secret-0123']);
  });

  it('loads YAML files, refuses duplicate keys, and reports a missing explicit file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hooklog-cfg-'));
    const ok = join(dir, 'ok.yaml');
    writeFileSync(ok, 'server:\n  port: 9999\n');
    expect(loadConfig(ok, {}).config.server.port).toBe(9999);
    const dup = join(dir, 'dup.yaml');
    writeFileSync(dup, 'server:\n  port: 1\n  port: 2\n');
    expect(() => loadConfig(dup, {})).toThrow(HooklogError);
    expect(() => loadConfig(join(dir, 'missing.yaml'), {})).toThrow(/does not exist/);
    expect(() => loadConfig(undefined, { HOOKLOG_CONFIG: join(dir, 'missing.yaml') })).toThrow(/does not exist/);
  });

  it('documents every option: each property in the schema has a description', () => {
    const schema = z.toJSONSchema(configSchema, { io: 'input' }) as Record<string, unknown>;
    const undocumented: string[] = [];
    const walk = (node: Record<string, unknown>, path: string) => {
      for (const [k, v] of Object.entries((node.properties ?? {}) as Record<string, Record<string, unknown>>)) {
        if (!v.description) undocumented.push(`${path}${k}`);
        walk(v, `${path}${k}.`);
        if (v.items && typeof v.items === 'object') walk(v.items as Record<string, unknown>, `${path}${k}[].`);
      }
    };
    walk(schema, '');
    expect(undocumented).toEqual([]);
  });

  it('redacts every secret for printing', () => {
    const c = parseConfig(
      {
        store: { clickhouse: { url: 'http://ch:8123', password: 'pw-123' } },
        stream: { kafka: { brokers: ['k:9092'], sasl: { mechanism: 'plain', username: 'u', password: 'kafka-pw' } } },
        event_hooks: [hook()],
      },
      {},
    );
    const printed = JSON.stringify(redactSecrets(c));
    for (const secret of ['pw-123', 'kafka-pw', '0123456789abcdef']) expect(printed).not.toContain(secret);
    expect(printed).toContain(REDACTED);
    expect(printed).toContain('http://ch:8123');
  });
});

describe('secrets in config', () => {
  const PRIVATE_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  const KEY_BODY = PRIVATE_KEY.split('\n')[1]!;
  /** A config with a value in every secret field there is. */
  const everySecret = () => ({
    store: { clickhouse: { url: 'http://ch:8123', password: 'ch-password-1' } },
    stream: {
      kafka: { brokers: ['k:9092'], sasl: { mechanism: 'plain', username: 'u', password: 'kafka-password-1' } },
    },
    event_hooks: [hook({ auth: { secrets: ['event-hook-secret-1', 'event-hook-secret-2'] } })],
    token_hooks: [{ id: 't1', org: 'acme', auth: { type: 'header', secrets: ['token-hook-secret-1'] }, rules: [] }],
    orgs: [
      { id: 'a', base_url: 'https://a.okta.com', auth: { ssws: { token: 'ssws-token-value-1' } } },
      {
        id: 'b',
        base_url: 'https://b.okta.com',
        auth: { oauth: { client_id: 'c', key_id: 'kid-1', private_key: PRIVATE_KEY } },
      },
    ],
    api: {
      keys: [
        'api-key-value-0123456789abcdef',
        { name: 'acme-analysts', secret: 'scoped-key-value-0123456789ab', orgs: ['acme'], role: 'analyst' },
      ],
    },
    alerting: {
      webhooks: [
        {
          name: 'ops',
          url: 'https://hooks.example.com/services/T000/B000/webhook-url-token-1',
          headers: { authorization: 'Bearer webhook-token-1' },
        },
      ],
    },
  });
  const values = [
    'ch-password-1',
    'kafka-password-1',
    'event-hook-secret-1',
    'event-hook-secret-2',
    'token-hook-secret-1',
    'ssws-token-value-1',
    KEY_BODY,
    'api-key-value-0123456789abcdef',
    'scoped-key-value-0123456789ab',
    'webhook-token-1',
    'webhook-url-token-1', // an incoming-webhook URL is itself a credential
  ];

  it('check-config prints none of them: the schema marks each secret where it is declared', () => {
    const printed = JSON.stringify(redactConfig(parseConfig(everySecret(), {}), configJsonSchema()));
    for (const v of values) expect(printed, v).not.toContain(v);
    // What is not secret stays readable, and the redacted lists keep their length.
    expect(printed).toContain('http://ch:8123');
    expect(printed).toContain('"name":"ops"');
    // A bare key is hidden whole; a scoped key keeps its name and orgs readable, its secret hidden.
    expect(printed).toContain(
      `"keys":["${REDACTED}",{"name":"acme-analysts","secret":"${REDACTED}","orgs":["acme"],"role":"analyst"}]`,
    );
    expect(printed).toContain(`"secrets":["${REDACTED}","${REDACTED}"]`);
  });

  it('every config key named like a secret is marked secret in the schema (the two lists cannot drift)', () => {
    const unmarked: string[] = [];
    const walk = (node: SchemaNode, path: string) => {
      for (const branch of [...(node.anyOf ?? []), ...(node.oneOf ?? [])]) walk(branch, path);
      if (node.items) walk(node.items, `${path}[]`);
      if (typeof node.additionalProperties === 'object') walk(node.additionalProperties, `${path}.*`);
      for (const [k, v] of Object.entries(node.properties ?? {})) {
        if ((SECRET_KEYS as readonly string[]).includes(k) && !v.secret) unmarked.push(`${path}.${k}`);
        walk(v, `${path}.${k}`);
      }
    };
    walk(configJsonSchema(), '');
    expect(unmarked).toEqual([]);
  });

  it.each([
    ['${HOOK_SECRET', 'event_hooks.0.auth.secrets.0', 'does not open a placeholder'],
    ['${HOOK-SECRET}', 'event_hooks.0.auth.secrets.0', 'does not open a placeholder'],
    ['pre${1X}post-0123456789', 'event_hooks.0.auth.secrets.0', 'does not open a placeholder'],
    ['$HOOK_SECRET', 'event_hooks.0.auth.secrets.0', 'write ${HOOK_SECRET}'],
    ['%HOOK_SECRET%', 'event_hooks.0.auth.secrets.0', 'write ${HOOK_SECRET}'],
  ])('refuses the secret %j, naming its key', (written, key, says) => {
    expectConfigError({ event_hooks: [hook({ auth: { secrets: [written] } })] }, `config key "${key}"`, says);
  });

  it('refuses an unparsable placeholder in any value and an unexpanded variable in any secret field', () => {
    expectConfigError({ data_dir: '/var/${DATA' }, 'config key "data_dir"', 'does not open a placeholder');
    expectConfigError({ api: { keys: ['$API_KEY'] } }, 'config key "api.keys.0"', 'write ${API_KEY}');
    expectConfigError(
      { alerting: { webhooks: [{ name: 'ops', url: 'https://x.example', headers: { authorization: '$TOKEN' } }] } },
      'config key "alerting.webhooks.0.headers.authorization"',
    );
    // Outside secret fields a leading $ is ordinary text; $${ writes a literal ${.
    expect(parseConfig({ data_dir: '/var/$HOME' }, {}).data_dir).toBe('/var/$HOME');
    expect(parseConfig({ data_dir: '/var/$${X}' }, {}).data_dir).toBe('/var/${X}');
    expect(
      parseConfig({ event_hooks: [hook({ auth: { secrets: ['${S}'] } })] }, { S: 'from-the-environment-1' })
        .event_hooks[0]!.auth.secrets,
    ).toEqual(['from-the-environment-1']);
  });
});
