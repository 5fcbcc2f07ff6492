/**
 * The token hook's internal events, one function each: it counts in the
 * process registry (platform/metrics.ts; labels are the configured hook id
 * and our own closed lists) and logs through a child logger bound to
 * `component: token-hook`. Payload values (claims, logins) are never bound.
 * Counter children are bound once per hook, so the answer path only increments.
 */
import type { Logger } from '../../platform/log.js';
import { counter, deferredCounter, gauge, histogram, type DeferredCounter } from '../../platform/metrics.js';
import type { AuthFailure } from './auth.js';

export const OUTCOMES = ['commands', 'deny', 'none', 'error_allow', 'error_deny'] as const;
export type Outcome = (typeof OUTCOMES)[number];
export const ERROR_KINDS = ['internal', 'unsafe_answer', 'bad_request', 'lookup_reload', 'jwks_fetch'] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];
/** Where a decision can be lost: only at the spool (its byte cap, a disk refusing writes, a line torn by a crash). */
export type DropReason = 'spool_full' | 'spool_failed' | 'spool_torn';

/** Plain numbers beside the metrics, for tests and the stop log. */
export interface TokenHookCounters {
  decisions: Record<Outcome, number>;
  errors: Record<ErrorKind, number>;
  authFailures: Partial<Record<AuthFailure, number>>;
  auditAppended: number;
  auditDropped: number;
  /** Decisions written to the disk spool (the stream was down or slow). */
  auditSpooled: number;
  /** Spooled decisions appended to the stream since. */
  auditReplayed: number;
  lookupReloads: number;
  jwksFetches: number;
  jwksThrottled: number;
}

/** Drop warnings are summarised, at most one per this interval, so a full queue cannot flood the log. */
const DROP_LOG_INTERVAL_MS = 5000;

export type TokenHookTelemetry = ReturnType<typeof createTelemetry>;

export function createTelemetry(hook: string, logger: Logger) {
  const log = logger.child({ component: 'token-hook', hook });
  const decisions = counter({
    name: 'hooklog_token_hook_decisions_total',
    help: 'Token hook answers by outcome.',
    labelNames: ['hook', 'outcome'],
  });
  const errors = counter({
    name: 'hooklog_token_hook_errors_total',
    help: 'Token hook errors by kind.',
    labelNames: ['hook', 'kind'],
  });
  const authFailures = counter({
    name: 'hooklog_token_hook_auth_failures_total',
    help: 'Token hook requests refused with 401, by reason.',
    labelNames: ['hook', 'reason'],
  });
  const dropped = counter({
    name: 'hooklog_token_hook_audit_dropped_total',
    help: 'Decisions left out of the audit trail.',
    labelNames: ['hook', 'reason'],
  });
  const spooled = counter({
    name: 'hooklog_token_hook_audit_spooled_total',
    help: 'Decisions written to the disk spool because the stream was down or slow.',
    labelNames: ['hook'],
  });
  const replayed = counter({
    name: 'hooklog_token_hook_audit_replayed_total',
    help: 'Spooled decisions appended to the stream once it recovered.',
    labelNames: ['hook'],
  });
  const spoolBytes = gauge({
    name: 'hooklog_token_hook_audit_spool_bytes',
    help: 'Bytes in the audit spool not yet replayed into the stream.',
    labelNames: ['hook'],
  });
  const latency = histogram({
    name: 'hooklog_token_hook_decision_seconds',
    help: 'Time from a read request body to its answer (parse, rules, answer checks).',
    labelNames: ['hook'],
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05],
  });
  // Counted on every answer: added to the metric when it is read (scrape), not through prom-client per decision.
  const decisionsBy = Object.fromEntries(
    OUTCOMES.map((o) => [o, deferredCounter(decisions, { hook, outcome: o })]),
  ) as Record<Outcome, DeferredCounter>;
  const errorsBy = Object.fromEntries(ERROR_KINDS.map((k) => [k, errors.labels({ hook, kind: k })])) as Record<
    ErrorKind,
    { inc(): void }
  >;
  const latencyOf = latency.labels({ hook });
  const counters: TokenHookCounters = {
    decisions: Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>,
    errors: Object.fromEntries(ERROR_KINDS.map((k) => [k, 0])) as Record<ErrorKind, number>,
    authFailures: {},
    auditAppended: 0,
    auditDropped: 0,
    auditSpooled: 0,
    auditReplayed: 0,
    lookupReloads: 0,
    jwksFetches: 0,
    jwksThrottled: 0,
  };
  let dropsUnlogged = 0;
  let lastDropLog = 0;
  let spooledUnlogged = 0;
  let lastSpoolLog = 0;
  const spooledOf = spooled.labels({ hook });
  const replayedOf = replayed.labels({ hook });
  const spoolBytesOf = spoolBytes.labels({ hook });
  const error = (kind: ErrorKind) => {
    counters.errors[kind]++;
    errorsBy[kind].inc();
  };

  return {
    counters,
    decided(outcome: Outcome, seconds: number): void {
      counters.decisions[outcome]++;
      decisionsBy[outcome].inc();
      latencyOf.observe(seconds);
    },
    /** An internal error or an answer that failed its protocol check; the error policy answered instead. */
    failed(kind: 'internal' | 'unsafe_answer', err: unknown, requestId: string | undefined): void {
      error(kind);
      log.error({ kind, requestId, err }, 'token_hook_error');
    },
    badRequest(status: number, reason: string, requestId: string | undefined): void {
      error('bad_request');
      log.warn({ status, reason, requestId }, 'token_hook_bad_request');
    },
    authFailed(reason: AuthFailure, requestId: string | undefined, ip: string): void {
      counters.authFailures[reason] = (counters.authFailures[reason] ?? 0) + 1;
      authFailures.inc({ hook, reason });
      log.warn({ reason, requestId, ip }, 'token_hook_auth_failed');
    },
    auditAppended(records: number, ms: number): void {
      counters.auditAppended += records;
      log.debug({ records, ms }, 'token_hook_audit_appended');
    },
    /** An append failed after its retries; its records go to the spool, not away. */
    auditAppendFailed(records: number, err: unknown): void {
      log.warn({ records, err }, 'token_hook_audit_append_failed_spooling');
    },
    auditSpooled(records: number, backlogBytes: number): void {
      counters.auditSpooled += records;
      spooledOf.inc(records);
      spoolBytesOf.set(backlogBytes);
      spooledUnlogged += records;
      const now = Date.now();
      if (now - lastSpoolLog >= DROP_LOG_INTERVAL_MS) {
        log.warn({ spooled: spooledUnlogged, backlogBytes }, 'token_hook_audit_spooled');
        spooledUnlogged = 0;
        lastSpoolLog = now;
      }
    },
    auditReplayed(records: number, backlogBytes: number): void {
      counters.auditReplayed += records;
      replayedOf.inc(records);
      spoolBytesOf.set(backlogBytes);
      if (backlogBytes === 0) log.info({ replayed: counters.auditReplayed }, 'token_hook_audit_spool_drained');
    },
    auditSpoolError(err: unknown): void {
      log.error({ err }, 'token_hook_audit_spool_sync_failed');
    },
    auditDropped(reason: DropReason, records: number, err?: unknown): void {
      counters.auditDropped += records;
      dropped.inc({ hook, reason }, records);
      dropsUnlogged += records;
      const now = Date.now();
      if (now - lastDropLog >= DROP_LOG_INTERVAL_MS || err !== undefined) {
        log.warn({ reason, dropped: dropsUnlogged, ...(err === undefined ? {} : { err }) }, 'token_hook_audit_dropped');
        dropsUnlogged = 0;
        lastDropLog = now;
      }
    },
    lookupReloaded(table: string, rows: number, ms: number): void {
      counters.lookupReloads++;
      log.info({ table, rows, ms: Math.round(ms) }, 'token_hook_lookup_reloaded');
    },
    lookupReloadFailed(table: string, err: unknown): void {
      error('lookup_reload');
      log.error({ table, err }, 'token_hook_lookup_reload_failed_keeping_previous');
    },
    jwksFetched(url: string, keys: number, ms: number): void {
      counters.jwksFetches++;
      log.info({ url, keys, ms: Math.round(ms) }, 'token_hook_jwks_fetched');
    },
    jwksFetchFailed(url: string, err: unknown): void {
      error('jwks_fetch');
      log.error({ url, err }, 'token_hook_jwks_fetch_failed_keeping_cached_keys');
    },
    jwksThrottled(url: string): void {
      counters.jwksThrottled++;
      log.debug({ url }, 'token_hook_jwks_refresh_throttled');
    },
    stopped(): void {
      for (const o of OUTCOMES) decisionsBy[o].release();
      log.info({ counters }, 'token_hook_stopped');
    },
  };
}
