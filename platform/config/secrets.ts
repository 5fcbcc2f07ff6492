/**
 * Key names whose values are secrets wherever they appear in config or log
 * objects. One list serves `hooklog check-config` (which prints the config with
 * these values replaced) and pino's redaction paths, so the two cannot drift.
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
