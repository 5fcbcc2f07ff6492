/**
 * The record the watch appends to `<prefix>.logs` when a hook hooklog
 * manages is found deactivated, unverified or gone: a LogEvent of type
 * `hooklog.hook.drift` (outcome FAILURE, reason the finding, target the
 * hook), which the built-in rule `hooklog.hook.registration.drift`
 * (consumers/alerting/content/hook-deliveries.yaml) alerts on, as it does on
 * the service's own `event_hook.delivery` failures. It lands in ClickHouse
 * too, as a record of when hooklog saw it.
 *
 * Its uuid and published derive from what the service says (the hook's id,
 * the finding, its lastUpdated), so every instance watching the same org
 * appends the same event: the store folds the copies into one row and the
 * alerting dedup window makes them one alert.
 */
import { createHash } from 'node:crypto';
import { hookLabel, type DesiredHook } from './desired.js';
import type { RegisteredHook } from './service.js';

export const DRIFT_EVENT_TYPE = 'hooklog.hook.drift';
export type Finding = 'deactivated' | 'unverified' | 'missing';

/** A name-based (version 5 style) UUID of `parts`: the same parts, the same uuid. */
function stableUuid(parts: readonly string[]): string {
  const h = createHash('sha1').update(parts.join('\u0000')).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

const WHAT: Record<Finding, string> = {
  deactivated: 'is INACTIVE at the service',
  unverified: 'is UNVERIFIED at the service (it receives nothing until verified)',
  missing: 'is not registered with the service',
};

export function driftEvent(
  d: DesiredHook,
  r: RegisteredHook | null,
  finding: Finding,
  nowMs: number,
): { uuid: string; published: string; json: Record<string, unknown> } {
  const parsed = r?.lastUpdated ? Date.parse(r.lastUpdated) : NaN;
  // A gone hook has no lastUpdated: the minute it was seen gone (instances agree within it).
  const published = new Date(Number.isFinite(parsed) ? parsed : Math.floor(nowMs / 60_000) * 60_000).toISOString();
  const uuid = stableUuid([DRIFT_EVENT_TYPE, d.org, d.kind, d.id, r?.id ?? '', finding, published]);
  const type = d.kind === 'event' ? 'EventHook' : 'InlineHook';
  return {
    uuid,
    published,
    json: {
      uuid,
      published,
      eventType: DRIFT_EVENT_TYPE,
      version: '0',
      severity: 'WARN',
      legacyEventType: null,
      displayMessage: `${hookLabel(d)} (${d.name}) ${WHAT[finding]}`,
      actor: {
        id: 'hooklog',
        type: 'SystemPrincipal',
        alternateId: 'hooklog',
        displayName: 'hooklog',
        detailEntry: null,
      },
      outcome: { result: 'FAILURE', reason: finding },
      target: [{ id: r?.id ?? d.name, type, alternateId: d.id, displayName: d.name, detailEntry: null }],
      client: null,
      transaction: { type: 'JOB', id: uuid, detail: null },
      debugContext: {
        debugData: {
          hook: d.id,
          status: r?.status ?? null,
          verificationStatus: r?.verificationStatus ?? null,
        },
      },
    },
  };
}
