import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { HooklogError } from '../../platform/errors.js';
import { unexpandedSecrets } from '../../platform/config/secrets.js';
import { configJsonSchema, configSchema, type Config } from './schema.js';

export const DEFAULT_CONFIG_PATH = './hooklog.yaml';

export interface LoadedConfig {
  readonly config: Config;
  /** Where it came from: a file path, or 'defaults' when no file exists. */
  readonly origin: string;
  /** Set when the demo hook's secret was generated and must be shown to the operator once. */
  readonly generatedDemoSecret?: string;
}

/**
 * Replaces `${NAME}` (and `${NAME:-fallback}`) in every string of the parsed
 * YAML tree. Interpolating values after parsing, not text before it, means a
 * secret can never change the document's structure and errors can name the key.
 * A `${` that does not open such a placeholder (`${HOOK_SECRET` without its
 * brace, `${1X}`) is an error naming the key, never literal text: it would
 * otherwise become the value itself, a secret anyone could read in the file.
 * `$${` writes a literal `${`.
 */
export function interpolateEnv(value: unknown, env: NodeJS.ProcessEnv, path: string[] = []): unknown {
  if (typeof value === 'string') {
    const key = path.join('.') || '(root)';
    return value.replace(
      /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{/g,
      (whole: string, name: string | undefined, fallback: string | undefined) => {
        if (whole === '$${') return '${';
        if (name === undefined)
          throw new HooklogError(
            'CONFIG_INVALID',
            `config key "${key}": "\${" does not open a placeholder here; write \${NAME} or \${NAME:-default} (NAME: letters, digits, _), or $\${ for a literal "\${"`,
          );
        const v = env[name];
        if (v !== undefined && v !== '') return v;
        if (fallback !== undefined) return fallback;
        throw new HooklogError('CONFIG_INVALID', `config key "${key}": environment variable ${name} is not set`);
      },
    );
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolateEnv(v, env, [...path, String(i)]));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateEnv(v, env, [...path, k])]));
  }
  return value;
}

/** Validates an already-parsed config tree; errors name each offending key. */
export function parseConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env): Config {
  const unexpanded = unexpandedSecrets(raw, configJsonSchema());
  if (unexpanded.length > 0) throw new HooklogError('CONFIG_INVALID', unexpanded.join('\n'));
  const result = configSchema.safeParse(interpolateEnv(raw ?? {}, env));
  if (!result.success) throw new HooklogError('CONFIG_INVALID', formatIssues(result.error));
  return deepFreeze(result.data);
}

export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => {
      const key = i.path.join('.') || '(root)';
      if (i.code === 'unrecognized_keys')
        return `config key "${key}": unknown key(s) ${i.keys.map((k) => `"${k}"`).join(', ')}`;
      return `config key "${key}": ${i.message}`;
    })
    .join('\n');
}

/**
 * Loads the config: `path` if given, else HOOKLOG_CONFIG, else ./hooklog.yaml;
 * with no file at the default location, the documented default (embedded
 * stream and store, one demo event hook).
 */
export function loadConfig(path?: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const explicit = path ?? env.HOOKLOG_CONFIG;
  const file = explicit ?? DEFAULT_CONFIG_PATH;
  if (!existsSync(file)) {
    if (explicit) throw new HooklogError('CONFIG_NOT_FOUND', `config file ${file} does not exist`);
    return defaultConfig(env);
  }
  const doc = parseDocument(readFileSync(file, 'utf8'), { uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new HooklogError('CONFIG_INVALID', `${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
  }
  try {
    return { config: parseConfig(doc.toJS(), env), origin: file };
  } catch (err) {
    if (err instanceof HooklogError) throw new HooklogError(err.code, `${file}:\n${err.message}`);
    throw err;
  }
}

/** The zero-setup default: embedded everything under ./data and one demo hook. */
export function defaultConfig(env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const given = env.HOOKLOG_DEMO_SECRET;
  const secret = given && given.length > 0 ? given : randomBytes(24).toString('base64url');
  const config = parseConfig(
    { event_hooks: [{ id: 'demo', org: 'demo', auth: { header: 'authorization', secrets: [secret] } }] },
    env,
  );
  return given ? { config, origin: 'defaults' } : { config, origin: 'defaults', generatedDemoSecret: secret };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
