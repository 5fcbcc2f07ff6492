/**
 * The running token hooks: for each configured hook, its authenticator
 * (keys prefetched), compiled rules, loaded and watched lookup tables, audit
 * queue and telemetry. Everything that can fail on I/O happens here, at
 * start; `decide` — the answer path — is synchronous and touches no I/O.
 */
import { join } from 'node:path';
import { HooklogError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log.js';
import type { Stream } from '../../platform/stream/types.js';
import { NO_CHANGE, UnsafeAnswerError, denyAnswer, renderAnswer, type RenderedAnswer } from './answer.js';
import { AuditQueue } from './audit.js';
import { createAuthenticator, type Authenticator } from './auth.js';
import type { TokenHookConfig } from './config.js';
import { LookupTable } from './lookup.js';
import { jsonText } from '../body.js';
import { MAX_JSON_DEPTH, parseTokenRequest } from './request.js';
import { compileRules, evaluate, usesRisk, type CompiledRule, type Decision } from './rules.js';
import { RiskView, type RiskLookup } from './risk-view.js';
import { createTelemetry, type Outcome, type TokenHookTelemetry } from './telemetry.js';

/** One hook, ready to answer. */
export interface TokenHook {
  readonly config: TokenHookConfig;
  readonly auth: Authenticator;
  readonly rules: readonly CompiledRule[];
  readonly tables: ReadonlyMap<string, LookupTable>;
  readonly audit: AuditQueue | undefined;
  readonly telemetry: TokenHookTelemetry;
  /** The answer the error policy gives when on_error is deny (built once). */
  readonly onErrorDeny: RenderedAnswer;
}

export interface TokenHooks {
  get(id: string): TokenHook | undefined;
  readonly logger: Logger;
  /** Stops watching files and key sets, and appends the decisions still queued. */
  stop(): Promise<void>;
}

export interface TokenHooksOptions {
  readonly hooks: readonly TokenHookConfig[];
  readonly stream: Stream;
  /** `<prefix>.token-decisions`. */
  readonly topic: string;
  /** Where each hook's audit spool lives (`<data_dir>/token-hook-audit` in production). */
  readonly spoolDir: string;
  readonly logger: Logger;
  /** `<prefix>.risk`: watched (risk-view.ts) when a rule asks for the user's risk. */
  readonly riskTopic?: string;
}

/** A request refused before any rule ran. */
export interface BadRequest {
  readonly status: 400;
  readonly error: string;
}

/**
 * A hook's rules compiled and its lookup tables loaded (not yet watched), or
 * CONFIG_INVALID naming the hook: what start needs before it takes a request,
 * and what `check-config` checks (`checkTokenHooks`). `risk` answers rules
 * that ask for the user's level (the process's view of `<prefix>.risk`).
 */
async function prepareHook(
  config: TokenHookConfig,
  risk: RiskLookup | undefined,
): Promise<Pick<TokenHook, 'rules' | 'tables'>> {
  const tables = new Map(config.lookups.map((l) => [l.name, new LookupTable(l)]));
  const org = config.org;
  const { rules, issues } = compileRules(
    config.rules,
    (name, column) => {
      const table = tables.get(name);
      table?.require(column);
      return table;
    },
    risk ? { userRisk: (ctx) => risk.level(org, ctx.userId, Date.now()) } : undefined,
  );
  if (issues.length > 0)
    throw new HooklogError('CONFIG_INVALID', `token hook "${config.id}": ${issues.map((i) => i.message).join('; ')}`);
  for (const table of tables.values()) {
    try {
      await table.load();
    } catch (err) {
      throw new HooklogError('CONFIG_INVALID', `token hook "${config.id}": ${(err as Error).message}`, { cause: err });
    }
  }
  return { rules, tables };
}

/** Compiles every hook's rules and loads its lookup files as start would, starting nothing. */
export async function checkTokenHooks(hooks: readonly TokenHookConfig[]): Promise<void> {
  // Risk rules compile against a view that knows no one: checking needs the rules, not the levels.
  const nobody: RiskLookup = { level: () => 'none' };
  for (const config of hooks) await prepareHook(config, nobody);
}

async function startHook(
  config: TokenHookConfig,
  opts: TokenHooksOptions,
  started: TokenHook[],
  risk: RiskLookup | undefined,
): Promise<void> {
  const telemetry = createTelemetry(config.id, opts.logger);
  const { rules, tables } = await prepareHook(config, risk);
  const auth = createAuthenticator(config.auth, {
    fetched: (url, keys, ms) => telemetry.jwksFetched(url, keys, ms),
    fetchFailed: (url, err) => telemetry.jwksFetchFailed(url, err),
    throttled: (url) => telemetry.jwksThrottled(url),
  });
  const audit = config.audit.enabled
    ? new AuditQueue({
        stream: opts.stream,
        topic: opts.topic,
        capacity: config.audit.queue_capacity,
        batchRecords: config.audit.batch_records,
        flushIntervalMs: config.audit.flush_interval_ms,
        spoolFile: join(opts.spoolDir, `${config.id}.spool`),
        spoolMaxBytes: config.audit.spool_max_bytes,
        telemetry,
      })
    : undefined;
  const hook: TokenHook = {
    config,
    auth,
    rules,
    tables,
    audit,
    telemetry,
    onErrorDeny: denyAnswer(config.on_error_summary),
  };
  started.push(hook);
  audit?.start();
  for (const table of tables.values()) {
    table.watch({
      reloaded: (t, n, ms) => telemetry.lookupReloaded(t, n, ms),
      reloadFailed: (t, err) => telemetry.lookupReloadFailed(t, err),
    });
  }
  await auth.start();
}

async function stopHook(hook: TokenHook): Promise<void> {
  hook.auth.stop();
  await Promise.all([...hook.tables.values()].map((t) => t.stop()));
  await hook.audit?.close();
  hook.telemetry.stopped();
}

/**
 * Compiles, loads and starts every configured token hook; throws CONFIG_INVALID naming the hook when one cannot
 * start.
 */
export async function startTokenHooks(opts: TokenHooksOptions): Promise<TokenHooks> {
  const started: TokenHook[] = [];
  // One view for every hook of the process, started only when a rule asks for risk; current before any answer.
  let view: RiskView | undefined;
  try {
    const asking = opts.hooks.find((h) => usesRisk(h.rules));
    if (asking) {
      if (!opts.riskTopic)
        throw new HooklogError(
          'CONFIG_INVALID',
          `token hook "${asking.id}": a rule asks for risk, and no risk topic was given`,
        );
      view = new RiskView(opts.logger);
      await view.start(opts.stream, opts.riskTopic);
    }
    for (const config of opts.hooks) await startHook(config, opts, started, view);
  } catch (err) {
    view?.stop();
    await Promise.allSettled(started.map(stopHook));
    throw err;
  }
  const byId = new Map(started.map((h) => [h.config.id, h]));
  return {
    get: (id) => byId.get(id),
    logger: opts.logger.child({ component: 'token-hook' }),
    stop: async () => {
      view?.stop();
      await Promise.all(started.map(stopHook));
    },
  };
}

function outcomeOf(decision: Decision, answer: RenderedAnswer): Outcome {
  if (decision.deny !== undefined) return 'deny';
  return answer.status === 204 ? 'none' : 'commands';
}

/**
 * The answer path: bytes in, answer out, synchronously. Bad input is a 400
 * (the service then issues the original token); an internal error or an
 * answer that fails its protocol check goes to the hook's error policy. The
 * decision is queued for the audit trail without waiting for it.
 */
export function decide(hook: TokenHook, raw: Buffer, requestId: string | undefined): RenderedAnswer | BadRequest {
  const started = performance.now();
  const text = jsonText(raw, MAX_JSON_DEPTH);
  if (!text.ok) return badRequest(hook, text.detail, requestId);
  let json: unknown;
  try {
    json = JSON.parse(text.text);
  } catch {
    return badRequest(hook, 'body is not JSON', requestId);
  }
  const parsed = parseTokenRequest(json);
  if (!parsed.ok) return badRequest(hook, parsed.reason, requestId);
  const ctx = parsed.ctx;
  let decision: Decision | undefined;
  let answer: RenderedAnswer;
  let outcome: Outcome;
  let errorKind: 'internal' | 'unsafe_answer' | undefined;
  try {
    decision = evaluate(hook.rules, ctx);
    answer = renderAnswer(decision, { id: ctx.idClaims !== undefined, access: ctx.accessClaims !== undefined });
    outcome = outcomeOf(decision, answer);
  } catch (err) {
    errorKind = err instanceof UnsafeAnswerError ? 'unsafe_answer' : 'internal';
    hook.telemetry.failed(errorKind, err, requestId);
    const deny = hook.config.on_error === 'deny';
    answer = deny ? hook.onErrorDeny : NO_CHANGE;
    outcome = deny ? 'error_deny' : 'error_allow';
  }
  const seconds = (performance.now() - started) / 1000;
  hook.telemetry.decided(outcome, seconds);
  hook.audit?.offer({
    decidedAt: Date.now(),
    hookId: hook.config.id,
    org: hook.config.org,
    eventId: ctx.eventId,
    requestId: ctx.requestId,
    userId: ctx.userId,
    clientId: ctx.clientId,
    grantType: ctx.grantType,
    outcome,
    rulesMatched: decision?.matched ?? [],
    commandsJson: answer.status === 200 ? answer.commandsJson : undefined,
    errorSummary:
      outcome === 'deny' ? decision?.deny : outcome === 'error_deny' ? hook.config.on_error_summary : undefined,
    errorKind,
    latencyUs: Math.round(seconds * 1e6),
  });
  return answer;
}

function badRequest(hook: TokenHook, reason: string, requestId: string | undefined): BadRequest {
  hook.telemetry.badRequest(400, reason, requestId);
  return { status: 400, error: reason };
}
