/**
 * The pull sources: for each configured org, a System Log poller and (when
 * enabled) a legacy Events poller, all in this process. Requests of every org
 * share one p-queue that caps requests in flight; each org has its own
 * authenticator and, per API, its own rate-limit budget. Waits (interval,
 * budget, backoff, a blocked org's slow retry) happen outside the queue, so a
 * failing or throttled org never holds a slot the others need.
 */
import PQueue from 'p-queue';
import { retry, sleep } from '../platform/retry.js';
import { HooklogError, isRetriable } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import type { Topics } from '../platform/stream/headers.js';
import type { Store } from '../platform/store/index.js';
import type { Assignment, ConsumedRecord, Stream, Transactor } from '../platform/stream/types.js';
import type { Authenticator } from '../platform/identity/auth.js';
import { createAuthenticator } from '../platform/identity/authenticator.js';
import { IdentityClient } from '../platform/identity/client.js';
import { withPolicies, type IdpPolicies } from '../platform/identity/policies.js';
import { BudgetLedger, ledgerPath } from '../platform/identity/budget-ledger.js';
import { RateBudget } from '../platform/identity/rate-limit.js';
import type { OrgConfig, PollSectionConfig } from './config.js';
import { legacyEventsSource } from './legacy-events/source.js';
import { cursorKey, isFollowable, readCursor, type PollSourceName } from './poller/cursor.js';
import { PollerHealth, type HealthSnapshot } from './poller/health.js';
import { PageSlots } from './poller/page-slots.js';
import { Poller, type PollSource } from './poller/poller.js';
import { knownInStore } from './reconcile/known.js';
import { Reconciler, readReconcilePosition, reconcileCursorKey } from './reconcile/reconciler.js';
import { clampStart, parseStart } from './start.js';
import { systemLogSource } from './system-log/source.js';
import { identityUnit } from './identity/unit.js';
import type { IdentitySync } from './identity/sync.js';
import { DIRECTORY_SCOPES } from '../platform/identity/directory.js';
import { createPollerTelemetry, watchPageSlots, type PollerTelemetry } from './telemetry.js';

/** How often a request waiting for the ownership lease looks again. */
const OWNERSHIP_RECHECK_MS = 100;

export interface IngestOptions {
  readonly orgs: readonly OrgConfig[];
  readonly stream: Stream;
  readonly topics: Topics;
  readonly logger: Logger;
  /** Requests in flight across all orgs. Default 8. */
  readonly maxConcurrentRequests?: number;
  /**
   * Pages held in memory across all orgs: fetched or being fetched, and not yet stored (see PageSlots).
   * Default 16: the requests in flight plus a page being appended on most cursor partitions.
   */
  readonly maxPagesHeld?: number;
  /** Consumer group sharing the pollers' work among instances. Default `<cursors topic>.pollers`. */
  readonly group?: string;
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
  /** `<prefix>.identity`, where the identity sync writes. Required when an org has identity_sync enabled. */
  readonly identityTopic?: string;
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
  /** The identity syncs this process runs now (ingest/identity/), by org. */
  readonly identitySyncs: ReadonlyMap<string, IdentitySync>;
  stop(): Promise<void>;
}

/**
 * Ownership (several instances on one cluster): each (org, API) is owned by
 * whoever owns the `<prefix>.cursors` partition its cursor key lands on, by
 * the consumer-group assignment of that topic's partitions (`group`). On
 * assignment of a partition we first claim its transactional owner
 * (`<cursors topic>.<partition>`), which fences any earlier owner (a zombie can
 * neither append a page nor move a cursor after that), then read the
 * partition's cursors, then start its pollers. On revocation the pollers stop
 * before the partition is given up. The embedded stream is one process: it owns
 * every partition.
 */
interface Unit {
  readonly key: string;
  readonly org: OrgConfig;
  readonly auth: Authenticator;
  readonly budget: RateBudget;
  /** Starts the unit's work on a claimed partition, from the cursors read after the claim. */
  start(partition: number, tx: Transactor, latest: ReadonlyMap<string, ConsumedRecord>, a: Assignment): Running;
  running: Running | null;
}

/** A unit's work while this process owns it: a continuous poller, a reconciler or an identity sync. */
interface Running {
  readonly partition: number;
  /** A poller's or reconciler's (an identity sync reports through its own logger and metrics). */
  readonly telemetry?: PollerTelemetry;
  readonly handle?: PollerHandle;
  readonly identity?: IdentitySync;
  stop(): Promise<void>;
}

/** Joins the pollers' group, then starts the pollers of what this process owns. Resolves once those run. */
export async function startIngest(opts: IngestOptions): Promise<Ingest> {
  const enabled = opts.orgs.filter((o) => o.system_log.enabled || o.legacy_events.enabled || o.identity_sync.enabled);
  if (enabled.length === 0) return { pollers: [], identitySyncs: new Map(), stop: async () => undefined };
  const log = opts.logger.child({ component: 'ingest' });
  const policies = withPolicies(opts.policies);
  const queue = new PQueue({ concurrency: opts.maxConcurrentRequests ?? 8 });
  const slots = new PageSlots(opts.maxPagesHeld ?? 16);
  const unwatch = watchPageSlots(slots);
  // Every request attempt (retries too) waits while this process's ownership lease is unconfirmed (it was
  // paused or cut off): a zombie does not call an org beside its new owner before it learns what it owns now.
  let owned: () => boolean = () => true;
  const schedule = <T>(fn: () => Promise<T>, signal?: AbortSignal) =>
    queue.add(
      async () => {
        while (!owned() && !signal?.aborted) await sleep(OWNERSHIP_RECHECK_MS, signal);
        signal?.throwIfAborted();
        return fn();
      },
      { signal },
    );

  const units: Unit[] = [];
  for (const org of enabled) {
    const auth = await pollerAuthenticator(org, opts.logger);
    const sections: Array<[PollSectionConfig, PollSource]> = [];
    const startOf = (s: PollSectionConfig) => (now: number) => parseStart(s.start, now) ?? now;
    if (org.system_log.enabled && org.system_log.mode === 'reconcile') {
      units.push(reconcileUnit(org, opts, auth, schedule, policies));
    } else if (org.system_log.enabled) {
      sections.push([
        org.system_log,
        systemLogSource({ baseUrl: org.base_url, topic: opts.topics.logs, startMs: startOf(org.system_log) }),
      ]);
    }
    if (org.legacy_events.enabled) {
      const s = org.legacy_events;
      sections.push([
        s,
        legacyEventsSource({
          baseUrl: org.base_url,
          topic: opts.topics.legacyEvents,
          startMs: startOf(s),
          filter: s.filter,
        }),
      ]);
    }
    if (org.identity_sync.enabled) {
      const identityTopic = opts.identityTopic;
      if (!identityTopic)
        throw new HooklogError(
          'INTERNAL',
          `orgs[${org.id}].identity_sync: the pollers were started without the identity topic`,
        );
      const unit = identityUnit(org, auth, {
        stream: opts.stream,
        identityTopic,
        cursorsTopic: opts.topics.cursors,
        logger: opts.logger,
        policies,
        schedule,
        // The same ledger files as the management API's families (platform/identity/management.ts): the sync and
        // response actions of the host spend one bucket's window together.
        budget: (family, share) => budgetFor(opts, org.id, `mgmt-${family}`, share),
      });
      units.push({
        key: unit.key,
        org,
        auth,
        budget: unit.budget,
        running: null,
        start: (partition, tx, latest, a) => {
          const sync = unit.start(tx, latest, () => {
            a.release([partition]);
            void revoke([partition], 'fenced');
          });
          return { partition, identity: sync, stop: () => sync.stop() };
        },
      });
    }
    for (const [section, source] of sections) {
      const budget = budgetFor(opts, org.id, source.name, section.rate_limit_share);
      const holder: Pick<Unit, 'running'> = { running: null };
      // The client reports into the telemetry of whichever poller the unit runs now.
      const client = unitClient(org, auth, schedule, policies, () => holder.running?.telemetry);
      units.push(
        Object.assign(holder, {
          key: cursorKey(source.name, org.id),
          org,
          auth,
          budget,
          start: (partition: number, tx: Transactor, latest: ReadonlyMap<string, ConsumedRecord>, a: Assignment) =>
            startPoller({ org, section, source, client, budget, auth }, partition, tx, latest, a),
        }),
      );
    }
  }

  const claims = new Map<number, Transactor>();
  type PollUnit = {
    org: OrgConfig;
    section: PollSectionConfig;
    source: PollSource;
    client: IdentityClient;
    budget: RateBudget;
    auth: Authenticator;
  };
  const startPoller = (
    unit: PollUnit,
    partition: number,
    tx: Transactor,
    latest: ReadonlyMap<string, ConsumedRecord>,
    a: Assignment,
  ): Running => {
    const { org, section, source, budget } = unit;
    const labels = { org: org.id, source: source.name };
    let stored = readCursor(latest, source.name, org.id);
    const health = new PollerHealth({
      startedMs: Date.now(),
      silentAfterMs: section.silent_after_ms,
      cursorSavedMs: stored ? Date.parse(stored.savedAt) || null : null,
      newestPublishedMs: stored?.newestPublished ? Date.parse(stored.newestPublished) || null : null,
    });
    const telemetry = createPollerTelemetry(
      opts.logger,
      labels,
      health,
      () => budget.snapshot.state?.remaining ?? null,
      () => {
        const { state, used } = budget.snapshot;
        return state ? used / budget.allowedPerWindow(state.limit) : null;
      },
    );
    if (!stored && latest.has(cursorKey(source.name, org.id))) telemetry.cursorUnreadable();
    if (stored && !isFollowable(stored.next, org.base_url, source.path)) {
      // base_url changed since: never send this org's credentials to the old host. Starting afresh
      // re-reads a window at worst, and the tables fold what was already stored.
      telemetry.cursorElsewhere(new URL(stored.next).origin);
      stored = null;
    }
    const poller = new Poller({
      org: org.id,
      baseUrl: org.base_url,
      source,
      client: unit.client,
      budget,
      stream: tx,
      topics: opts.topics,
      cursor: stored,
      pollIntervalMs: section.poll_interval_ms,
      successRecordIntervalMs: section.success_record_interval_ms,
      policies,
      health,
      telemetry,
      slots,
      // Another instance claimed this partition: stop its pollers here; the group tells us what we own next.
      onFenced: () => {
        a.release([partition]);
        void revoke([partition], 'fenced');
      },
    });
    poller.start();
    const handle: PollerHandle = {
      org: org.id,
      source: source.name,
      position: () => poller.position,
      health: () => health.snapshot(Date.now()),
      authenticator: unit.auth,
      budget,
      requests: () => null,
    };
    return { partition, telemetry, handle, stop: () => poller.stop() };
  };
  const stopping = new AbortController();
  // A claim or the cursor read failing for a moment (a broker restarting) is retried a few times while we
  // still hold the lease; beyond that the partitions wait for the next rebalance (logged).
  const assigned = (partitions: readonly number[], a: Assignment) =>
    retry(() => assignOnce(partitions, a), {
      policy: { ...policies.append, retries: 5 },
      retriable: (err) => isRetriable(err) && a.current(),
      signal: stopping.signal,
      onRetry: (err, attempt, delayMs) =>
        log.warn({ err, attempt, delay_ms: delayMs, partitions }, 'pollers_assignment_retry'),
    });
  const assignOnce = async (partitions: readonly number[], a: Assignment) => {
    owned = () => a.current();
    const mine = units.filter((u) => partitions.includes(a.partitionOf(u.key)));
    const held = [...new Set(mine.map((u) => a.partitionOf(u.key)))];
    // Claim first: from here on a previous owner can neither append nor move a cursor, so what we read next is final.
    await Promise.all(
      held
        .filter((p) => !claims.has(p))
        .map(async (p) => {
          claims.set(p, await opts.stream.claim(`${opts.topics.cursors}.${p}`, () => a.current()));
        }),
    );
    const latest =
      held.length > 0
        ? await opts.stream.readLatestByKey(opts.topics.cursors, held)
        : new Map<string, ConsumedRecord>();
    for (const u of mine) u.running = u.start(a.partitionOf(u.key), claims.get(a.partitionOf(u.key))!, latest, a);
    log.info({ partitions: held, pollers: mine.length }, 'pollers_assigned');
  };

  const revoke = async (partitions: readonly number[], why: string) => {
    const mine = units.filter((u) => u.running && partitions.includes(u.running.partition));
    await Promise.all(
      mine.map(async (u) => {
        const r = u.running!;
        u.running = null;
        await r.stop();
      }),
    );
    await Promise.all(
      partitions.map(async (p) => {
        const tx = claims.get(p);
        claims.delete(p);
        await tx?.close();
      }),
    );
    if (mine.length > 0) log.info({ partitions, pollers: mine.length, why }, 'pollers_revoked');
  };

  // The cursors' reader joins its own group first, then this process joins the pollers' group: a
  // partition handed over (now or later) restores its cursors without waiting for a group to form
  // (Stream.follow). Not both at once: joining the pollers' group takes partitions from the instances
  // polling them at once, and this process's reader, a new group, reaches the broker's
  // group.initial.rebalance.delay.ms later — orgs polled by nobody in between. So the old owners poll
  // until this process can resume at once (test/e2e/fleet-handover.test.ts).
  await opts.stream.follow(opts.topics.cursors);
  const assignment = await opts.stream.assign({
    topic: opts.topics.cursors,
    group: opts.group ?? `${opts.topics.cursors}.pollers`,
    onAssigned: assigned,
    onRevoked: (partitions) => revoke(partitions, 'revoked'),
    onError: (err) => log.error({ err }, 'pollers_assignment_failed'),
  });

  let stopped: Promise<void> | null = null;
  return {
    get pollers(): PollerHandle[] {
      return units.flatMap((u) => (u.running?.handle ? [u.running.handle] : []));
    },
    get identitySyncs(): Map<string, IdentitySync> {
      return new Map(units.flatMap((u) => (u.running?.identity ? [[u.org.id, u.running.identity] as const] : [])));
    },
    stop() {
      // Stops every poller (each abort also takes its waiting entries out of the queue), then leaves the group.
      stopping.abort();
      stopped ??= assignment.stop().finally(unwatch);
      return stopped;
    },
  };
}

/** The org's share of one API's bucket: shared, through the ledger, with every process of the host (a backfill too). */
export function budgetFor(
  opts: Pick<IngestOptions, 'budgetDir'>,
  org: string,
  source: string,
  share: number,
): RateBudget {
  return new RateBudget({
    share,
    store: opts.budgetDir ? new BudgetLedger(ledgerPath(opts.budgetDir, org, source)) : undefined,
  });
}

/**
 * Reconcile mode: the System Log behind real time, only the hooks' types, only what they missed
 * (reconcile/). Owned like a poller: its position (`reconcile:<org>`) lives on the cursors topic, and it
 * appends through the claimed transactional owner of that key's partition.
 */
function reconcileUnit(
  org: OrgConfig,
  opts: IngestOptions,
  auth: Authenticator,
  schedule: <T>(fn: () => Promise<T>, signal?: AbortSignal) => Promise<T>,
  policies: IdpPolicies,
): Unit {
  const store = opts.store;
  if (!store) {
    throw new HooklogError(
      'CONFIG_INVALID',
      `orgs[${org.id}].system_log.mode: reconcile needs the store (run the pollers with the sink)`,
    );
  }
  const s = org.system_log;
  // The same bucket (and ledger) as a continuous System Log poller of the org: /api/v1/logs.
  const budget = budgetFor(opts, org.id, 'system-log', s.rate_limit_share);
  const unit: Unit = {
    key: reconcileCursorKey(org.id),
    org,
    auth,
    budget,
    running: null,
    start: (partition, tx, latest) => {
      const stored = readReconcilePosition(latest, org.id, org.base_url);
      const health = new PollerHealth({
        startedMs: Date.now(),
        silentAfterMs: s.silent_after_ms,
        cursorSavedMs: null,
        newestPublishedMs: null,
      });
      const telemetry = createPollerTelemetry(
        opts.logger,
        { org: org.id, source: 'reconcile' },
        health,
        () => budget.snapshot.state?.remaining ?? null,
      );
      const r = s.reconcile;
      const reconciler = new Reconciler({
        org: org.id,
        baseUrl: org.base_url,
        client,
        budget,
        stream: tx,
        topics: opts.topics,
        known: knownInStore(store),
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
      reconciler.start();
      const handle: PollerHandle = {
        org: org.id,
        source: 'system-log',
        position: () => reconciler.position.windowNext,
        health: () => health.snapshot(Date.now()),
        authenticator: auth,
        budget,
        requests: () => reconciler.requests,
      };
      return { partition, telemetry, handle, stop: () => reconciler.stop() };
    },
  };
  // The client reports into the telemetry of the reconciler the unit runs now.
  const client = unitClient(org, auth, schedule, policies, () => unit.running?.telemetry);
  return unit;
}

/**
 * An (org, API) unit's client: made once, it outlives hand-overs, so it reports into whichever
 * poller or reconciler the unit runs now (`current`), and into nothing while it runs none.
 */
function unitClient(
  org: OrgConfig,
  auth: Authenticator,
  schedule: <T>(fn: () => Promise<T>, signal?: AbortSignal) => Promise<T>,
  policies: IdpPolicies,
  current: () => PollerTelemetry | undefined,
): IdentityClient {
  return new IdentityClient({
    org: org.id,
    auth,
    requestTimeoutMs: org.request_timeout_ms,
    schedule,
    policies,
    events: {
      reply: (status) => status !== 200 && current()?.reply(status),
      retry: (err, attempt, delayMs) => current()?.retry(err, attempt, delayMs),
      rateLimited: (delayMs, resetKnown) => current()?.rateLimited(delayMs, resetKnown),
      budgetWait: (ms, why) => current()?.budgetWait(ms, why),
    },
  });
}

/** One authenticator per org, shared by its pollers (one token serves both scopes). */
export function pollerAuthenticator(org: OrgConfig, logger: Logger): Promise<Authenticator> {
  const scopes = [
    ...(org.system_log.enabled ? ['okta.logs.read'] : []),
    ...(org.legacy_events.enabled ? ['okta.events.read'] : []),
    ...(org.identity_sync.enabled ? DIRECTORY_SCOPES : []),
  ];
  return createAuthenticator(org, scopes, logger);
}
