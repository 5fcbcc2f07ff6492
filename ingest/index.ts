/**
 * The pull sources: for each configured org, a System Log poller and (when
 * enabled) a legacy Events poller, all in this process. Requests of every org
 * share one p-queue that caps requests in flight; each org has its own
 * authenticator and, per API, its own rate-limit budget. Waits (interval,
 * budget, backoff, a blocked org's slow retry) happen outside the queue, so a
 * failing or throttled org never holds a slot the others need.
 */
import { readFileSync } from 'node:fs';
import PQueue from 'p-queue';
import { HooklogError, errorMessage } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import type { Topics } from '../platform/stream/headers.js';
import type { Store } from '../platform/store/index.js';
import type { ConsumedRecord, Stream } from '../platform/stream/types.js';
import type { Authenticator } from './client/auth.js';
import { SswsAuthenticator } from './client/auth.js';
import { IdentityClient } from './client/client.js';
import { DpopProver } from './client/dpop.js';
import { loadSigningKey } from './client/keys.js';
import { OAuthAuthenticator } from './client/oauth.js';
import { withPolicies, type IdpPolicies } from './client/policies.js';
import { BudgetLedger, ledgerPath } from './client/budget-ledger.js';
import { RateBudget } from './client/rate-limit.js';
import type { OrgConfig, PollSectionConfig } from './config.js';
import { legacyEventsSource } from './legacy-events/source.js';
import { isFollowable, readCursor, type PollSourceName } from './poller/cursor.js';
import { PollerHealth, type HealthSnapshot } from './poller/health.js';
import { Poller, type PollSource } from './poller/poller.js';
import { knownInStore } from './reconcile/known.js';
import { Reconciler, readReconcilePosition } from './reconcile/reconciler.js';
import { clampStart, parseStart } from './start.js';
import { systemLogSource } from './system-log/source.js';
import { createPollerTelemetry } from './telemetry.js';

export interface IngestOptions {
  readonly orgs: readonly OrgConfig[];
  readonly stream: Stream;
  readonly topics: Topics;
  readonly logger: Logger;
  /** Requests in flight across all orgs. Default 8. */
  readonly maxConcurrentRequests?: number;
  /** Tests shorten the slow waits. */
  readonly policies?: Partial<IdpPolicies>;
  /**
   * Where each org's rate budget is kept (`<data_dir>/rate-budget`), shared
   * with `hooklog backfill` and surviving restarts. Without it the budget
   * lives in this process's memory only.
   */
  readonly budgetDir?: string;
  /** The store, for reconcile mode's "already stored?" lookups. Required when an org runs in reconcile mode. */
  readonly store?: Store;
}

export interface PollerHandle {
  readonly org: string;
  readonly source: PollSourceName;
  /** The URL the next request goes to. */
  position(): string;
  health(): HealthSnapshot;
  readonly authenticator: Authenticator;
  readonly budget: RateBudget;
  /** Requests this poller made (reconcile mode counts them; continuous pollers report null). */
  requests(): number | null;
}

export interface Ingest {
  readonly pollers: readonly PollerHandle[];
  stop(): Promise<void>;
}

/** Reads the stored positions, then starts every enabled poller. Resolves once they run. */
export async function startIngest(opts: IngestOptions): Promise<Ingest> {
  const enabled = opts.orgs.filter((o) => o.system_log.enabled || o.legacy_events.enabled);
  if (enabled.length === 0) return { pollers: [], stop: async () => undefined };
  const policies = withPolicies(opts.policies);
  const latest = await opts.stream.readLatestByKey(opts.topics.cursors);
  const queue = new PQueue({ concurrency: opts.maxConcurrentRequests ?? 8 });
  const schedule = <T>(fn: () => Promise<T>, signal?: AbortSignal) => queue.add(fn, { signal });

  const pollers: Array<Poller | Reconciler> = [];
  const handles: PollerHandle[] = [];
  for (const org of enabled) {
    const auth = await createAuthenticator(org, opts.logger);
    const sections: Array<[PollSectionConfig, PollSource]> = [];
    const startOf = (s: PollSectionConfig) => (now: number) => parseStart(s.start, now) ?? now;
    if (org.system_log.enabled && org.system_log.mode === 'reconcile') {
      const r = startReconciler(org, latest, opts, auth, schedule, policies);
      pollers.push(r.reconciler);
      handles.push(r.handle);
    } else if (org.system_log.enabled) {
      sections.push([org.system_log, systemLogSource({ baseUrl: org.base_url, topic: opts.topics.logs, startMs: startOf(org.system_log) })]);
    }
    if (org.legacy_events.enabled) {
      const s = org.legacy_events;
      sections.push([s, legacyEventsSource({ baseUrl: org.base_url, topic: opts.topics.legacyEvents, startMs: startOf(s), filter: s.filter })]);
    }
    for (const [section, source] of sections) {
      const labels = { org: org.id, source: source.name };
      let stored = readCursor(latest, source.name, org.id);
      const budget = budgetFor(opts, org.id, source.name, section.rate_limit_share);
      const health = new PollerHealth({
        startedMs: Date.now(),
        silentAfterMs: section.silent_after_ms,
        cursorSavedMs: stored ? Date.parse(stored.savedAt) || null : null,
        newestPublishedMs: stored?.newestPublished ? Date.parse(stored.newestPublished) || null : null,
      });
      const telemetry = createPollerTelemetry(opts.logger, labels, health, () => budget.snapshot.state?.remaining ?? null, () => {
        const { state, used } = budget.snapshot;
        return state ? used / budget.allowedPerWindow(state.limit) : null;
      });
      if (!stored && latest.has(`${source.name}:${org.id}`)) telemetry.cursorUnreadable();
      if (stored && !isFollowable(stored.next, org.base_url, source.path)) {
        // base_url changed since: never send this org's credentials to the old host. Starting afresh
        // re-reads a window at worst, and the tables fold what was already stored.
        telemetry.cursorElsewhere(new URL(stored.next).origin);
        stored = null;
      }
      const client = new IdentityClient({
        org: org.id,
        auth,
        requestTimeoutMs: org.request_timeout_ms,
        schedule,
        policies,
        events: {
          reply: (status) => status !== 200 && telemetry.reply(status),
          retry: (err, attempt, delayMs) => telemetry.retry(err, attempt, delayMs),
          rateLimited: (delayMs, resetKnown) => telemetry.rateLimited(delayMs, resetKnown),
          budgetWait: (ms, why) => telemetry.budgetWait(ms, why),
        },
      });
      const poller = new Poller({
        org: org.id,
        baseUrl: org.base_url,
        source,
        client,
        budget,
        stream: opts.stream,
        topics: opts.topics,
        cursor: stored,
        pollIntervalMs: section.poll_interval_ms,
        policies,
        health,
        telemetry,
      });
      pollers.push(poller);
      handles.push({
        org: org.id, source: source.name, position: () => poller.position, health: () => health.snapshot(Date.now()), authenticator: auth, budget, requests: () => null,
      });
    }
  }
  for (const p of pollers) p.start();

  let stopping: Promise<void> | null = null;
  return {
    pollers: handles,
    stop() {
      // Each poller's abort also takes its waiting entries out of the queue (their add() rejects).
      stopping ??= Promise.all(pollers.map((p) => p.stop())).then(() => undefined);
      return stopping;
    },
  };
}

/** The org's share of one API's bucket: shared, through the ledger, with every process of the host (a backfill too). */
export function budgetFor(opts: Pick<IngestOptions, 'budgetDir'>, org: string, source: string, share: number): RateBudget {
  return new RateBudget({ share, store: opts.budgetDir ? new BudgetLedger(ledgerPath(opts.budgetDir, org, source)) : undefined });
}

/** Reconcile mode: the System Log behind real time, only the hooks' types, only what they missed (reconcile/). */
function startReconciler(
  org: OrgConfig,
  latest: ReadonlyMap<string, ConsumedRecord>,
  opts: IngestOptions,
  auth: Authenticator,
  schedule: <T>(fn: () => Promise<T>, signal?: AbortSignal) => Promise<T>,
  policies: IdpPolicies,
): { reconciler: Reconciler; handle: PollerHandle } {
  if (!opts.store) throw new HooklogError('CONFIG_INVALID', `orgs[${org.id}].system_log.mode: reconcile needs the store (run it in hooklog start)`);
  const s = org.system_log;
  // The same bucket (and ledger) as a continuous System Log poller of the org: /api/v1/logs.
  const budget = budgetFor(opts, org.id, 'system-log', s.rate_limit_share);
  const stored = readReconcilePosition(latest, org.id, org.base_url);
  const health = new PollerHealth({ startedMs: Date.now(), silentAfterMs: s.silent_after_ms, cursorSavedMs: null, newestPublishedMs: null });
  const telemetry = createPollerTelemetry(opts.logger, { org: org.id, source: 'reconcile' }, health, () => budget.snapshot.state?.remaining ?? null);
  const client = new IdentityClient({
    org: org.id,
    auth,
    requestTimeoutMs: org.request_timeout_ms,
    schedule,
    policies,
    events: {
      reply: (status) => status !== 200 && telemetry.reply(status),
      retry: (err, attempt, delayMs) => telemetry.retry(err, attempt, delayMs),
      rateLimited: (delayMs, resetKnown) => telemetry.rateLimited(delayMs, resetKnown),
      budgetWait: (ms, why) => telemetry.budgetWait(ms, why),
    },
  });
  const r = s.reconcile;
  const reconciler = new Reconciler({
    org: org.id,
    baseUrl: org.base_url,
    client,
    budget,
    stream: opts.stream,
    topics: opts.topics,
    known: knownInStore(opts.store),
    settings: {
      eventTypes: r.event_types,
      delayMs: r.delay_ms,
      cadenceMs: r.cadence_ms,
      lostDeliveryIntervalMs: r.lost_delivery_interval_ms,
      lostDeliveryLookbackMs: r.lost_delivery_lookback_ms,
    },
    position: stored,
    startMs: clampStart(parseStart(s.start, Date.now()) ?? Date.now(), Date.now()),
    policies,
    health,
    telemetry,
    onLostDelivery: (loss) => telemetry.lostDelivery(loss.hookId),
  });
  const handle: PollerHandle = {
    org: org.id,
    source: 'system-log',
    position: () => reconciler.position.windowNext,
    health: () => health.snapshot(Date.now()),
    authenticator: auth,
    budget,
    requests: () => reconciler.requests,
  };
  return { reconciler, handle };
}

/** One authenticator per org, shared by its pollers (one token serves both scopes). */
export async function createAuthenticator(org: OrgConfig, logger: Logger): Promise<Authenticator> {
  if (org.auth.ssws) return new SswsAuthenticator(org.auth.ssws.token);
  const o = org.auth.oauth!;
  const where = `orgs[${org.id}].auth.oauth.${o.private_key !== undefined ? 'private_key' : 'private_key_path'}`;
  let text: string;
  try {
    text = o.private_key ?? readFileSync(o.private_key_path!, 'utf8');
  } catch (err) {
    throw new HooklogError('CONFIG_INVALID', `${where}: cannot read ${o.private_key_path}: ${errorMessage(err)}`, { cause: err });
  }
  const log = logger.child({ component: 'oauth', org: org.id });
  const key = loadSigningKey(text, { kid: o.key_id, alg: o.algorithm }, where);
  const scopes = [...(org.system_log.enabled ? ['okta.logs.read'] : []), ...(org.legacy_events.enabled ? ['okta.events.read'] : [])];
  return new OAuthAuthenticator({
    org: org.id,
    tokenUrl: o.token_url ?? `${org.base_url.replace(/\/+$/, '')}/oauth2/v1/token`,
    clientId: o.client_id,
    key,
    scopes,
    dpop: o.dpop ? await DpopProver.create() : null,
    timeoutMs: org.request_timeout_ms,
    onToken: (t) => log.info({ renewal: t.renewal, expires_in_s: t.expiresInS, type: t.type }, 'oauth_token_obtained'),
  });
}
