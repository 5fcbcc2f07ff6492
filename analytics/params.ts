/**
 * Parameters of the named queries: declared as data, parsed from text (CLI
 * flags, URL query strings) into typed values, and bound server-side as
 * `{name:Type}` placeholders. A value is never spliced into SQL; parsing here
 * only decides whether it is acceptable and says which parameter is not.
 */
import { HooklogError } from '../platform/errors.js';
import { formatDateTime64, parseTimestamp } from '../platform/time.js';

export type ParamKind = 'string' | 'datetime' | 'uint';

/** One parameter of a named query. */
export interface ParamSpec {
  readonly name: string;
  readonly kind: ParamKind;
  readonly description: string;
  /** Absent means required. */
  readonly default?: string | number;
  /** Inclusive bounds for `uint`. */
  readonly min?: number;
  readonly max?: number;
}

/** The ClickHouse type each kind is bound as. */
export const CLICKHOUSE_TYPE: Readonly<Record<ParamKind, string>> = {
  string: 'String',
  datetime: "DateTime64(3, 'UTC')",
  uint: 'UInt32',
};

/** Every query takes these: the org, the half-open time range [since, until), and a row limit. */
export const COMMON_PARAMS: readonly ParamSpec[] = [
  {
    name: 'org',
    kind: 'string',
    description: 'The org (as configured: the org column), or * for every org at once (rows are not split by org).',
  },
  {
    name: 'since',
    kind: 'datetime',
    description: 'Start of the time range, inclusive (ISO-8601; UTC unless an offset is given).',
  },
  { name: 'until', kind: 'datetime', description: 'End of the time range, exclusive (ISO-8601).' },
  { name: 'limit', kind: 'uint', description: 'Most rows returned.', default: 100, min: 1, max: 10_000 },
];

const MAX_STRING_CHARS = 512;

/** A parameter that is missing, unknown or malformed: `param` names it, for a 400 or a CLI error. */
export class QueryParamError extends HooklogError {
  readonly param: string;
  constructor(param: string, message: string) {
    super('QUERY_INVALID', `parameter "${param}": ${message}`);
    this.param = param;
  }
}

function parseOne(spec: ParamSpec, text: string): string | number {
  switch (spec.kind) {
    case 'string':
      if (text.length === 0) throw new QueryParamError(spec.name, 'must not be empty');
      if (text.length > MAX_STRING_CHARS)
        throw new QueryParamError(spec.name, `must be at most ${MAX_STRING_CHARS} characters`);
      return text;
    case 'datetime': {
      const ms = parseTimestamp(text);
      if (ms === null)
        throw new QueryParamError(
          spec.name,
          `must be an ISO-8601 timestamp such as 2024-05-01T00:00:00Z, got ${JSON.stringify(text.slice(0, 60))}`,
        );
      return formatDateTime64(ms);
    }
    case 'uint': {
      if (!/^\d{1,10}$/.test(text))
        throw new QueryParamError(spec.name, `must be a whole number, got ${JSON.stringify(text.slice(0, 60))}`);
      const n = Number(text);
      const min = spec.min ?? 0;
      const max = spec.max ?? 0xffff_ffff;
      if (n < min || n > max) throw new QueryParamError(spec.name, `must be between ${min} and ${max}, got ${n}`);
      return n;
    }
  }
}

/**
 * Parses raw text values against the specs: unknown names, missing required
 * values and malformed values are refused with the parameter's name; defaults
 * fill the rest. `since` must be before `until` when both are declared.
 */
export function parseParams(
  specs: readonly ParamSpec[],
  raw: Readonly<Record<string, string | undefined>>,
): Record<string, string | number> {
  const known = new Map(specs.map((s) => [s.name, s]));
  for (const name of Object.keys(raw)) {
    if (!known.has(name))
      throw new QueryParamError(name, `unknown parameter (this query takes: ${specs.map((s) => s.name).join(', ')})`);
  }
  const out: Record<string, string | number> = {};
  for (const spec of specs) {
    const text = raw[spec.name];
    if (text === undefined) {
      if (spec.default === undefined) throw new QueryParamError(spec.name, 'is required');
      out[spec.name] = spec.default;
    } else {
      out[spec.name] = parseOne(spec, text);
    }
  }
  if (typeof out.since === 'string' && typeof out.until === 'string' && out.since >= out.until) {
    throw new QueryParamError('until', `must be after since (${out.since})`);
  }
  return out;
}
