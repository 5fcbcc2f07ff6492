import { HooklogError, errorMessage } from '../errors.js';
import { counter } from '../metrics.js';
import { clickHouseErrorKind, type ClickHouseErrorKind } from './error-kinds.js';

const failures = counter({
  name: 'hooklog_store_errors_total',
  help:
    'ClickHouse failures by kind (platform/store/error-kinds.ts): row (dead-lettered after bisection), ' +
    'transient (retried, shows as lag), config and unclassified (held and retried; alert on these).',
  labelNames: ['kind'],
});

/** Node/undici socket error codes that mean the server could not be reached or dropped us. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ESOCKETTIMEDOUT',
  'UND_ERR_SOCKET',
]);

/** The shape of `@clickhouse/client`'s `ClickHouseError`. */
interface ClickHouseErrorLike {
  message: string;
  code: string;
  type: string;
}

/**
 * Duck-typed on purpose: `@clickhouse/client` bundles its own copy of
 * `ClickHouseError`, and the chdb connection throws the one from
 * `@clickhouse/client-common`, so `instanceof` is false for half the errors.
 */
function asClickHouseError(err: unknown): ClickHouseErrorLike | null {
  if (!(err instanceof Error)) return null;
  const e = err as Error & { code?: unknown; type?: unknown };
  if (typeof e.code === 'string' && /^\d+$/.test(e.code) && typeof e.type === 'string' && e.type !== '') {
    return { message: e.message, code: e.code, type: e.type };
  }
  return null;
}

/** The hooklog error code of each kind; `config` and unclassified codes share STORE_QUERY_FAILED. */
const CODE_OF_KIND = {
  row: 'STORE_REJECTED_ROW',
  transient: 'STORE_UNAVAILABLE',
  config: 'STORE_QUERY_FAILED',
} as const satisfies Record<ClickHouseErrorKind, string>;

/**
 * The one place ClickHouse failures become hooklog errors, by the kind table in error-kinds.ts:
 * - `row` → `STORE_REJECTED_ROW` (not retriable: the sink bisects and dead-letters);
 * - `transient` → `STORE_UNAVAILABLE` (retriable), as are network failures; the client's own
 *   request timeout → `TIMEOUT` (retriable);
 * - `config`, and any code not in the table → `STORE_QUERY_FAILED` (not retriable by the insert, so
 *   not dead-lettered either: the sink's batch fails whole and is offered again with backoff, held).
 * Errors that already are HooklogErrors pass through unchanged.
 */
export function classifyClickHouseError(err: unknown): HooklogError {
  if (err instanceof HooklogError) return err;
  const ch = asClickHouseError(err);
  if (ch) {
    const kind = clickHouseErrorKind(Number(ch.code), ch.message);
    failures.inc({ kind });
    const what = `ClickHouse ${ch.type} (${ch.code})`;
    const detail = firstLine(ch.message);
    if (kind === 'unclassified') {
      const msg = `${what}, not in hooklog's table of ClickHouse error kinds (held, retried): ${detail}`;
      return new HooklogError('STORE_QUERY_FAILED', msg, { cause: err });
    }
    return new HooklogError(CODE_OF_KIND[kind], `${what}: ${detail}`, { retriable: kind === 'transient', cause: err });
  }
  const message = errorMessage(err);
  const code = err instanceof Error ? (err as Error & { code?: unknown }).code : undefined;
  if (/^Timeout error/i.test(message)) {
    failures.inc({ kind: 'transient' });
    return new HooklogError('TIMEOUT', `ClickHouse request timed out: ${message}`, { retriable: true, cause: err });
  }
  if (
    (typeof code === 'string' && NETWORK_CODES.has(code)) ||
    /socket hang up|connect ECONN|ECONNRESET/i.test(message)
  ) {
    failures.inc({ kind: 'transient' });
    return new HooklogError('STORE_UNAVAILABLE', `ClickHouse unreachable: ${message}`, { retriable: true, cause: err });
  }
  failures.inc({ kind: 'unclassified' });
  return new HooklogError('STORE_QUERY_FAILED', `ClickHouse request failed: ${firstLine(message)}`, { cause: err });
}

function firstLine(s: string): string {
  const line = s.split('\n', 1)[0] ?? '';
  return line.length > 500 ? `${line.slice(0, 500)}…` : line;
}
