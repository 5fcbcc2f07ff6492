/**
 * The transmitter: `<prefix>.risk-changes` → decisions and SETs, one partition
 * (so one org) at a time, in order, by the one instance that owns it (owned.ts).
 *
 * For each change, two atomic steps around the push:
 *
 * 1. decide: the actions the change names (decide.ts) go onto `<prefix>.actions`
 *    and the signed SET into the checkpoint as `pending`, with the offset still
 *    at this change. From here on a crash repeats the delivery, never the
 *    decision: the next owner sends the very bytes the checkpoint holds
 *    (whatever the algorithm, whatever the config says by then).
 * 2. deliver: push until the receiver answers (5xx and network retried with
 *    backoff, within the org's security-events budget), then the outcome onto
 *    `<prefix>.ssf-deliveries` (and a refused SET, raw, into the dead letters)
 *    with the checkpoint past the change. The record's `attempts` counts the
 *    HTTP requests this process made for the SET, every retry included; the
 *    pushes of an instance that crashed before recording are not known.
 *
 * What remains: a crash after the receiver's 202 and before step 2 sends the
 * same bytes again after the restart; the receiver treats the repeated `jti`
 * as already received (RFC 8935), so the org sees one SET per change.
 */
import { deadLetter } from '../../platform/stream/headers.js';
import type { AttemptReply } from '../../platform/identity/client.js';
import type { ConsumedRecord, StreamRecord } from '../../platform/stream/types.js';
import { riskChangeSchema, type RiskChange } from '../../schemas/risk.js';
import { remember } from './checkpoint.js';
import type { ResponseOrgConfig, TriggersConfig } from './config.js';
import { decideActions } from './decide.js';
import type { Owned } from './owned.js';
import type { ResponsePolicies } from './policies.js';
import { pushSet } from './push.js';
import { actionStreamRecord, deliveryStreamRecord, type ResponseTopics } from './records.js';
import { setClaims } from './set.js';
import type { SetSigner } from './signer.js';
import type { ResponseTelemetry } from './telemetry.js';
import type { OrgManagement } from './management.js';

/** A signed SET waiting for the receiver's answer. */
export interface PendingSet {
  readonly offset: number;
  readonly change: RiskChange;
  readonly jti: string;
  readonly token: string;
}

export interface TransmitterState {
  readonly pending: PendingSet | null;
  /** Change ids handled lately: a change that reaches the topic twice is decided and sent once. */
  readonly recent: readonly string[];
}

export const initialTransmitterState = (): TransmitterState => ({ pending: null, recent: [] });

const RECENT_CHANGES = 1000;
const ORIGIN = 'response-transmitter';

export interface TransmitterDeps {
  readonly topics: ResponseTopics & { readonly deadletter: string };
  readonly orgs: ReadonlyMap<string, ResponseOrgConfig>;
  readonly triggers: TriggersConfig;
  readonly signer: SetSigner | null;
  readonly eventType: string;
  readonly management: OrgManagement;
  readonly policies: ResponsePolicies;
  readonly telemetry: ResponseTelemetry;
  readonly signal: AbortSignal;
  readonly now?: () => number;
}

/** Handles one risk-change record of an owned partition. */
export function transmitterHandler(d: TransmitterDeps) {
  const now = d.now ?? Date.now;
  // HTTP requests pushing each pending SET made by this process, the client's retries and the deliveries offered
  // again included (a delivery's record says how many it took).
  const tries = new Map<string, number>();
  return async (rec: ConsumedRecord, owned: Owned<TransmitterState>): Promise<void> => {
    const { state } = owned;
    let pending = state.pending?.offset === rec.offset ? state.pending : null;
    if (!pending) {
      const parsed = parseChange(rec);
      if (!parsed.ok) {
        d.telemetry.invalidChange(rec.partition, rec.offset, parsed.reason);
        const letter = deadLetter(rec.value, `RECORD_INVALID: ${parsed.reason}`, ORIGIN, {}, rec.key);
        await owned.step([{ topic: d.topics.deadletter, records: [letter] }], { nextOffset: rec.offset + 1, state });
        return;
      }
      const change = parsed.change;
      const org = d.orgs.get(change.org);
      if (!org || state.recent.includes(change.change_id)) return;
      const actions = decideActions(change, d.triggers, org, new Date(now()).toISOString());
      const claims =
        d.signer && org.security_events.enabled
          ? setClaims(
              change,
              {
                issuer: d.signer.issuer,
                eventType: d.eventType,
                orgUrl: d.management.baseUrl(change.org),
                settings: org.security_events,
              },
              now(),
            )
          : null;
      if (actions.length === 0 && claims === null) return;
      pending = claims ? { offset: rec.offset, change, jti: claims.jti, token: await d.signer!.sign(claims) } : null;
      await owned.step([{ topic: d.topics.actions, records: actions.map(actionStreamRecord) }], {
        nextOffset: pending ? rec.offset : rec.offset + 1,
        state: { pending, recent: pending ? state.recent : remember(state.recent, change.change_id, RECENT_CHANGES) },
      });
      for (const a of actions) d.telemetry.action(a.org, a.action ?? 'unknown', a.state);
      if (!pending) return;
    }
    await deliver(d, pending, owned, now, tries);
  };
}

async function deliver(
  d: TransmitterDeps,
  p: PendingSet,
  owned: Owned<TransmitterState>,
  now: () => number,
  tries: Map<string, number>,
) {
  const org = p.change.org;
  const m = await d.management.open(org);
  const onAttempt = (reply: AttemptReply) => {
    const n = (tries.get(p.jti) ?? 0) + 1;
    tries.set(p.jti, n);
    d.telemetry.setAttempt(org, reply, n > 1);
  };
  // Past the policy's retries this throws: the batch is offered again with the consumer's capped backoff, the SET
  // still pending, and the same bytes go out again.
  const outcome = await pushSet(m, p.token, { transient: d.policies.setTransient, signal: d.signal, onAttempt }).catch(
    (err: unknown) => {
      if (!d.signal.aborted) d.telemetry.setRetry(org, p.jti, err);
      throw err;
    },
  );
  // An answer came, so at least one request was made.
  const attempts = Math.max(1, tries.get(p.jti) ?? 0);
  tries.delete(p.jti);
  const c = p.change;
  const writes: Array<{ topic: string; records: StreamRecord[] }> = [
    {
      topic: d.topics.deliveries,
      records: [
        deliveryStreamRecord({
          org,
          change_id: c.change_id,
          jti: p.jti,
          user_id: c.entity.id,
          user_login: c.entity.login ?? '',
          previous_level: c.previous,
          current_level: c.current,
          rule_id: c.rule_id,
          alert_id: c.alert_id,
          result: outcome.result,
          status: outcome.status,
          err: outcome.result === 'refused' ? outcome.err : '',
          description: outcome.result === 'refused' ? outcome.description : '',
          attempts,
          at: new Date(now()).toISOString(),
        }),
      ],
    },
  ];
  if (outcome.result === 'refused') {
    const reason = `IDP_REQUEST_REJECTED: SET ${p.jti} refused by org ${org}: ${outcome.status} ${outcome.err}${outcome.description ? `: ${outcome.description}` : ''}`;
    writes.push({
      topic: d.topics.deadletter,
      records: [
        deadLetter(Buffer.from(p.token), reason, ORIGIN, { 'hooklog-jti': p.jti }, org, 'IDP_REQUEST_REJECTED'),
      ],
    });
  }
  await owned.step(writes, {
    nextOffset: p.offset + 1,
    state: { pending: null, recent: remember(owned.state.recent, c.change_id, RECENT_CHANGES) },
  });
  if (outcome.result === 'accepted') d.telemetry.setSent(org, p.jti, c);
  else d.telemetry.setRefused(org, p.jti, outcome.status, outcome.err, outcome.description);
}

function parseChange(rec: ConsumedRecord): { ok: true; change: RiskChange } | { ok: false; reason: string } {
  let v: unknown;
  try {
    v = JSON.parse(rec.value.toString('utf8'));
  } catch {
    return { ok: false, reason: 'risk change is not JSON' };
  }
  const parsed = riskChangeSchema.safeParse(v);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, reason: `not a risk change: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim() };
  }
  return { ok: true, change: parsed.data };
}
