import type { z } from 'zod';

/**
 * Key names whose values are secrets wherever they appear in log objects (and
 * in config, as a second net). Config fields are marked where they are declared
 * (`secret()` below), so a secret with a plain name (`api.keys`, a webhook's
 * `headers`) is known too; a test checks every config key of these names is
 * marked.
 */
export const SECRET_KEYS = [
  'secret',
  'secrets',
  'password',
  'token',
  'api_token',
  'private_key',
  'client_secret',
  'api_keys',
  'session_secret',
] as const;

const SECRET_SET = new Set<string>(SECRET_KEYS);

export const REDACTED = '[redacted]';

/**
 * A deep copy of `value` with every secret-named key's value replaced. Only
 * plain objects and arrays are walked: Errors, Buffers and Dates pass through
 * as they are, so log serializers still see them.
 */
export function redactSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value === null || typeof value !== 'object') return value;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  // fromEntries defines own properties, so a "__proto__" key in the input stays plain data.
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      SECRET_SET.has(k) && v !== undefined && v !== null
        ? Array.isArray(v)
          ? v.map(() => REDACTED)
          : REDACTED
        : redactSecrets(v),
    ]),
  );
}

/**
 * Marks a config field as a secret, where it is declared: `check-config` (and
 * anything else that prints config, through `redactConfig`) prints it
 * redacted, `--schema` shows `"secret": true`, and a value that looks like an
 * environment variable left unexpanded is refused (`unexpandedSecrets`).
 */
export function secret<T extends z.ZodType>(schema: T): T {
  return schema.meta({ secret: true });
}

/** The parts of a JSON Schema (as `z.toJSONSchema` writes it) that say where values sit. */
export interface SchemaNode {
  readonly secret?: boolean;
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly additionalProperties?: SchemaNode | boolean;
  readonly items?: SchemaNode;
  readonly anyOf?: readonly SchemaNode[];
  readonly oneOf?: readonly SchemaNode[];
  readonly allOf?: readonly SchemaNode[];
}

/**
 * Calls `visit` with the path and value of every value in `value` that
 * `schema` marks secret. Tolerant: a value that does not fit the schema (a
 * config not validated yet) is walked as far as it fits; under a union every
 * branch is followed.
 */
export function forEachSecret(
  schema: SchemaNode,
  value: unknown,
  visit: (path: readonly string[], value: unknown) => void,
  path: readonly string[] = [],
): void {
  if (value === undefined || value === null) return;
  if (schema.secret) {
    // Under a union, only the branch the value is of: a key given as { name, secret, orgs } is not
    // the bare-string branch, so only its `secret` is hidden, not its name and orgs.
    if (fitsType(schema.type, value)) visit(path, value);
    return;
  }
  for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])])
    forEachSecret(branch, value, visit, path);
  if (Array.isArray(value)) {
    if (schema.items) value.forEach((v, i) => forEachSecret(schema.items!, v, visit, [...path, String(i)]));
    return;
  }
  if (typeof value !== 'object') return;
  for (const [k, v] of Object.entries(value)) {
    const child =
      schema.properties?.[k] ??
      (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
    if (child) forEachSecret(child, v, visit, [...path, k]);
  }
}

/** Whether `value` is of a JSON Schema `type` (any value when the schema names none). */
function fitsType(type: SchemaNode['type'], value: unknown): boolean {
  if (type === undefined) return true;
  const kind = Array.isArray(value) ? 'array' : typeof value === 'number' ? 'number' : typeof value;
  const types: readonly string[] = typeof type === 'string' ? [type] : type;
  return types.some(
    (t) => t === kind || (t === 'integer' && Number.isInteger(value)) || (t === 'null' && value === null),
  );
}

/** A copy of `value` with each of its values at `paths` (and under every secret-named key) redacted. */
function redactAt(value: unknown, paths: ReadonlySet<string>, path: readonly string[] = []): unknown {
  if (paths.has(JSON.stringify(path))) return Array.isArray(value) ? value.map(() => REDACTED) : REDACTED;
  if (Array.isArray(value)) return value.map((v, i) => redactAt(v, paths, [...path, String(i)]));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactAt(v, paths, [...path, k])]));
}

/** The config as it may be printed: every field the schema marks secret, and every secret-named key, redacted. */
export function redactConfig(config: unknown, schema: SchemaNode): unknown {
  const paths = new Set<string>();
  forEachSecret(schema, config, (p) => paths.add(JSON.stringify(p)));
  return redactSecrets(redactAt(config, paths));
}

/**
 * Secret values written like an environment variable that was never expanded
 * (`$HOOK_SECRET`, `%HOOK_SECRET%`): used as they are, they would become the
 * secret itself, letting in whoever sends that text. Returns one message per
 * such value, naming its key; `raw` is the config as written, before `${…}`
 * interpolation.
 */
export function unexpandedSecrets(raw: unknown, schema: SchemaNode): string[] {
  const out: string[] = [];
  const check = (path: readonly string[], v: unknown) => {
    if (typeof v === 'string') {
      const m = /^\$([A-Za-z_][A-Za-z0-9_]*)$|^%([A-Za-z_][A-Za-z0-9_]*)%$/.exec(v.trim());
      if (m)
        out.push(
          `config key "${path.join('.')}": a secret written as ${v.trim()}, an environment variable that is not expanded; write \${${m[1] ?? m[2]}} to take it from the environment`,
        );
    } else if (Array.isArray(v)) v.forEach((x, i) => check([...path, String(i)], x));
    else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) check([...path, k], x);
  };
  forEachSecret(schema, raw, check);
  return out;
}
