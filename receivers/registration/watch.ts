/**
 * The watch: while hooklog runs (pollers role), every
 * `hook_registration.watch_interval_ms` it reads each managing org's hooks
 * (two GETs, on the org's management budget) and compares them with the
 * config. Gauges per hook say registered, active, verified and matches the
 * config; a hook found deactivated, unverified or gone is appended to the
 * logs topic as a `hooklog.hook.drift` event (drift-event.ts), once per
 * finding, for the built-in alert, once two passes in a row have seen it
 * ("gone" only for a hook it has seen registered, seen.ts: one never
 * applied yet is no finding): a hook that `hooks apply` is creating or
 * verifying at that moment is briefly missing or unverified, and that is no
 * finding. It never changes a hook:
 * `hooks apply` repairs.
 */
import type { OrgIdentity } from '../../platform/identity/config.js';
import type { IdpPolicies } from '../../platform/identity/policies.js';
import type { Logger } from '../../platform/log.js';
import { Header } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import type { RegistrationInput } from './desired.js';
import { driftEvent, type Finding } from './drift-event.js';
import { hooksByOrg, readOrg } from './index.js';
import { SeenHooks } from './seen.js';
import type { HookService } from './service.js';
import { healthOf } from './status.js';
import { createWatchTelemetry } from './telemetry.js';

export interface WatchOptions {
  readonly config: Omit<RegistrationInput, 'orgs'> & { readonly orgs: readonly OrgIdentity[] };
  readonly stream: Stream;
  /** `<prefix>.logs`: where the drift events go. */
  readonly topic: string;
  readonly logger: Logger;
  readonly intervalMs: number;
  readonly budgetDir?: string;
  readonly policies?: IdpPolicies;
  /** The file remembering which hooks were seen registered (`<data_dir>/hook-watch/seen.json`); none: in memory. */
  readonly seenPath?: string;
}

export interface HookWatch {
  /** Passes completed (every org read, or failed and counted). */
  readonly passes: number;
  stop(): Promise<void>;
}

export function startHookWatch(o: WatchOptions): HookWatch {
  const telemetry = createWatchTelemetry(o.logger);
  const by = hooksByOrg(o.config);
  /** The finding last appended per hook (`<org>/<kind>/<id>`), so each is appended once. */
  const appended = new Map<string, string>();
  /** The finding each hook had in the last pass (finding and the service's id of the hook). */
  const previous = new Map<string, string>();
  /** One client per org for the life of the watch: one OAuth token while it lasts, one budget. */
  const services = new Map<string, HookService>();
  /** Hooks seen registered: only those can go missing (one never applied yet is no finding). */
  const everRegistered = new SeenHooks(o.seenPath ?? null, o.logger);
  let passes = 0;
  let stopped = false;
  // Stopping aborts the pass in flight: a read waiting for the org's budget, a 429's reset or a slow reply would
  // otherwise hold SIGTERM up for as long (the requests are reads; nothing is left half done).
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const pass = async () => {
    for (const [orgId, desired] of by) {
      const org = o.config.orgs.find((x) => x.id === orgId);
      if (!org || stopped) continue;
      const state = await readOrg(o.config, org, desired, {
        access: 'read',
        prune: false,
        logger: o.logger,
        ...(o.budgetDir ? { budgetDir: o.budgetDir } : {}),
        ...(o.policies ? { policies: o.policies } : {}),
        ...(services.has(orgId) ? { service: services.get(orgId)! } : {}),
        signal: abort.signal,
      });
      if (stopped) return;
      if (state.service) services.set(orgId, state.service);
      if (state.errors.length) {
        telemetry.failed(orgId, state.errors[0]!);
        continue;
      }
      telemetry.checked(orgId);
      for (const p of state.plans) {
        const d = p.desired;
        if (!d) continue;
        const health = healthOf(p);
        telemetry.health(d, health);
        const key = `${d.org}/${d.kind}/${d.id}`;
        if (health.registered) everRegistered.add(key);
        const finding: Finding | null = !health.registered
          ? everRegistered.has(key)
            ? 'missing'
            : null
          : !health.active
            ? 'deactivated'
            : health.verified === false
              ? 'unverified'
              : null;
        const seen = finding ? `${finding}/${p.registered?.id ?? ''}` : null;
        const confirmed = seen !== null && previous.get(key) === seen;
        if (seen) previous.set(key, seen);
        else previous.delete(key);
        if (!finding) {
          appended.delete(key);
          continue;
        }
        if (!confirmed) continue;
        const event = driftEvent(d, p.registered, finding, Date.now());
        if (appended.get(key) === event.uuid) continue;
        await o.stream.append(o.topic, [
          {
            key: d.org,
            value: Buffer.from(JSON.stringify(event.json)),
            headers: { [Header.org]: d.org, [Header.source]: 'hooklog', [Header.receivedAt]: new Date().toISOString() },
          },
        ]);
        appended.set(key, event.uuid);
        telemetry.drift(d, finding);
      }
    }
  };

  const loop = () => {
    running = pass()
      .catch((err: unknown) => telemetry.crashed(err))
      .finally(() => {
        passes++;
        if (!stopped) timer = setTimeout(loop, o.intervalMs);
      });
  };
  loop();
  return {
    get passes() {
      return passes;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      abort.abort(new Error('the hook watch stopped'));
      await running;
    },
  };
}
