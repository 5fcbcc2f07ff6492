/**
 * The watch's internal events: one function each, logging through a child
 * logger (`component: hook-watch`) and counting in the shared registry.
 * Labels are configured ids (org, hook) and closed lists (kind, finding).
 */
import { errorMessage } from '../../platform/errors.js';
import type { Logger } from '../../platform/log.js';
import { counter, gauge } from '../../platform/metrics.js';
import type { DesiredHook } from './desired.js';
import type { Finding } from './drift-event.js';
import type { Health } from './status.js';

const labelNames = ['org', 'kind', 'hook'] as const;
const registered = gauge({
  name: 'hooklog_hook_registered',
  help: 'A hook hooklog manages (register:) is registered with the identity service (1) or not (0), as the last watch saw it.',
  labelNames,
});
const active = gauge({
  name: 'hooklog_hook_active',
  help: 'A managed hook is ACTIVE at the service (1) or not (0).',
  labelNames,
});
const verified = gauge({
  name: 'hooklog_hook_verified',
  help: 'A managed event hook is VERIFIED at the service (1) or not (0); only ACTIVE and VERIFIED hooks receive events. Event hooks only.',
  labelNames,
});
const matches = gauge({
  name: 'hooklog_hook_matches_config',
  help: 'A managed hook as registered matches the config (event types, URI, auth header, secret) (1) or not (0): `hooklog hooks plan` says how.',
  labelNames,
});
const drifts = counter({
  name: 'hooklog_hook_drift_events_total',
  help: 'hooklog.hook.drift events appended (the built-in alert fires on them), by finding: deactivated, unverified, missing.',
  labelNames: ['org', 'kind', 'hook', 'finding'],
});
const failures = counter({
  name: 'hooklog_hook_watch_failures_total',
  help: "Watch passes that could not read an org's hooks (credentials, scopes, the service).",
  labelNames: ['org'],
});
const lastChecked = gauge({
  name: 'hooklog_hook_watch_last_success_timestamp_seconds',
  help: "When the watch last read an org's hooks.",
  labelNames: ['org'],
});

const bit = (b: boolean) => (b ? 1 : 0);

export function createWatchTelemetry(logger: Logger) {
  const log = logger.child({ component: 'hook-watch' });
  const labels = (d: DesiredHook) => ({ org: d.org, kind: d.kind === 'event' ? 'event' : 'token', hook: d.id });
  return {
    health(d: DesiredHook, h: Health): void {
      registered.set(labels(d), bit(h.registered));
      active.set(labels(d), bit(h.active));
      if (h.verified !== null) verified.set(labels(d), bit(h.verified));
      matches.set(labels(d), bit(h.matches));
    },
    drift(d: DesiredHook, finding: Finding): void {
      drifts.inc({ ...labels(d), finding });
      log.warn(
        { org: d.org, hook: d.id, kind: d.kind, finding },
        'managed hook drifted; `hooklog hooks apply` repairs it',
      );
    },
    checked(org: string): void {
      lastChecked.set({ org }, Date.now() / 1000);
    },
    failed(org: string, line: string): void {
      failures.inc({ org });
      log.warn({ org, problem: line }, "could not read the org's hooks");
    },
    crashed(err: unknown): void {
      log.error({ err: errorMessage(err) }, 'hook watch pass failed');
    },
  };
}
