/**
 * A case's `mocks:` → the state its rule starts from, as earlier events (or
 * earlier runs) would have left it: a first_seen rule's seen values per
 * group, a stateful rule's previous event per group, a scheduled rule's rows
 * already alerted. The state is the engine's own (state/keyed.ts,
 * scheduled.ts), so a rule whose verdict depends on what it remembers is
 * tested from mocks alone, with no earlier events in the case.
 *
 * The anchor's form — Panther's `Mocks: [{objectName, returnValue}]`, the
 * names of the rule's state lookups and the values they return — converts
 * mechanically by what the value is (pantherToMocks): a list is the group's
 * seen set, an object its previous values, an empty value (a stub for a
 * write such as put_string_set) nothing. The group is the case's first
 * event's, as the Python rule derives its lookup key from the event.
 *
 * Extension point: each kind of mock is one entry of MOCK_KINDS, naming the
 * rule kinds that read it. `enrichment` stands for the GeoIP databases: the
 * answers by address that the case's events get (load.ts looks each event up
 * as the stream does on append). Lookup rows are a reserved name, an error
 * until rules read lookup tables.
 */
import { isIP } from 'node:net';
import { boundEnrichment, type Enrichment, type GeoLookup } from '../../../platform/enrichment/enrichment.js';
import { emptyState, type EngineState } from '../engine.js';
import { firstString, type FieldPath } from '../fields.js';
import type { CompiledRule, RuleKind } from '../rules/types.js';
import { rowIdentity } from '../scheduled.js';
import type { KeyedRuleState } from '../state/keyed.js';
import { shownValue } from '../rules/explain.js';
import { mockTimeMs, type CaseSpec } from './schema.js';
import { identityKey } from '../../../schemas/identity.js';
import type { ActorContext, ActorContextLookup } from '../identity/context.js';

type Mocks = Exclude<CaseSpec['mocks'], undefined | readonly unknown[]>;
type Scalar = string | number | boolean | null;

/** What a case's rule starts from: engine state (stream rules) or a scheduled rule's alerted rows. */
export interface MockedState {
  readonly engine?: EngineState;
  readonly scheduledSeen?: Record<string, number>;
  /** Users' identity context (`mocks.identity`), given to the case's events as the live engine gives it. */
  readonly identity?: ActorContextLookup;
  /** `mocks.enrichment`: the GeoIP databases' answers the case's events are looked up in. */
  readonly enrichment?: GeoLookup;
}

interface MockContext {
  readonly rule: CompiledRule;
  readonly org: string;
  readonly startMs: number;
  /** The group of the case's first event (the default key). */
  readonly firstKey: string;
}

type Apply = (entries: readonly unknown[], c: MockContext, into: Draft) => void;

interface Draft {
  keyed?: KeyedRuleState;
  scheduledSeen?: Record<string, number>;
  /** identityKey(org, user) → context. */
  identity?: Map<string, ActorContext>;
  enrichment?: Map<string, Enrichment>;
}

/** A mock that cannot apply: the case is an error saying why. */
class MockError extends Error {}

function groupKey(rule: CompiledRule, key: readonly Scalar[] | undefined, c: MockContext, what: string): string {
  if (key === undefined) return c.firstKey;
  if (key.length !== rule.groupBy.length)
    throw new MockError(
      `${what}: the rule groups by ${rule.groupBy.length} field${rule.groupBy.length === 1 ? '' : 's'}` +
        ` (${rule.groupBy.map((p) => ((p as FieldPath).raw ?? p).join('.')).join(', ') || 'none'}), the key has ${key.length} value${key.length === 1 ? '' : 's'}`,
    );
  // As the engine makes a key: the first value at each path as text, '' when missing.
  return JSON.stringify(key.map((v) => (v === null ? '' : String(v))));
}

function keyedOf(d: Draft): KeyedRuleState {
  return (d.keyed ??= { p: [], k: {}, evicted: 0 });
}

function timeOf(at: unknown, c: MockContext): number {
  return at === undefined ? c.startMs : mockTimeMs(at, c.startMs)!;
}

/** Every kind of mock: the rule kinds that read it and how it becomes their state. */
const MOCK_KINDS: Readonly<Record<keyof Mocks, { kinds: readonly RuleKind[]; apply: Apply }>> = {
  seen: {
    kinds: ['first_seen'],
    apply: (entries, c, d) => {
      entries.forEach((raw, i) => {
        const e = raw as { key?: Scalar[]; org?: string; values: Scalar[]; at?: unknown };
        const gk = JSON.stringify([e.org ?? c.org, groupKey(c.rule, e.key, c, `mocks.seen.${i}`)]);
        const t = timeOf(e.at, c);
        const st = keyedOf(d);
        const ks = (st.k[gk] ??= { t, id: `mock/seen/${i}`, v: {}, seen: {} });
        // As the engine keeps them: lower-cased text, each with when it was last seen.
        for (const v of e.values) if (v !== null && v !== '') ks.seen![String(v).toLowerCase()] = t;
        ks.t = Math.max(ks.t, t);
      });
    },
  },
  previous: {
    kinds: ['stateful'],
    apply: (entries, c, d) => {
      const names = new Set(c.rule.fields.map(([n]) => n));
      entries.forEach((raw, i) => {
        const e = raw as { key?: Scalar[]; org?: string; fields: Record<string, Scalar>; at?: unknown };
        const unknown = Object.keys(e.fields).filter((n) => !names.has(n));
        if (unknown.length)
          throw new MockError(
            `mocks.previous.${i}: ${unknown.map((n) => shownValue(n, 40)).join(', ')} not among the rule's fields (${[...names].join(', ') || 'none'})`,
          );
        const gk = JSON.stringify([e.org ?? c.org, groupKey(c.rule, e.key, c, `mocks.previous.${i}`)]);
        const t = timeOf(e.at, c);
        // Fields the mock leaves out are null, as an event without them would leave them.
        const v = Object.fromEntries([...names].map((n) => [n, e.fields[n] ?? null]));
        keyedOf(d).k[gk] = { t, id: `mock/previous/${i}`, v: { ...v, time: t } };
      });
    },
  },
  alerted: {
    kinds: ['scheduled'],
    apply: (entries, c, d) => {
      const s = c.rule.scheduled!;
      entries.forEach((raw, i) => {
        const e = raw as { key: Scalar[]; org?: string };
        if (e.key.length !== s.key.length)
          throw new MockError(
            `mocks.alerted.${i}: the rule's key is ${s.key.join(', ')}; the mock has ${e.key.length}`,
          );
        const key = JSON.stringify(e.key.map((v) => (v === null ? '' : String(v))));
        // Remembered as the last run returned it: runs forget rows older than lookback + every.
        (d.scheduledSeen ??= {})[rowIdentity(e.org ?? c.org, key)] = c.startMs;
      });
    },
  },
  identity: {
    // Not engine state: the context the live engine gives every stream rule's events (identity/context.ts).
    kinds: [
      'match',
      'threshold',
      'distinct',
      'sequence',
      'unfollowed',
      'absence',
      'stateful',
      'first_seen',
      'temporal',
    ],
    apply: (entries, c, d) => {
      const users = (d.identity ??= new Map());
      for (const raw of entries) {
        const byUser = raw as Record<
          string,
          { org?: string; groups?: (string | { id: string; name: string })[]; admin_roles?: string[]; status?: string }
        >;
        for (const [user, u] of Object.entries(byUser)) {
          const groups = (u.groups ?? []).map((g) => (typeof g === 'string' ? { name: g } : g));
          users.set(identityKey(u.org ?? c.org, user), {
            groups: groups.map((g) => g.name),
            // A group given by name only has no id: `actor.groupIds` lists those given with one.
            groupIds: groups.flatMap((g) => ('id' in g ? [g.id] : [])),
            // As the sync writes them: each once, sorted (schemas/identity.ts).
            adminRoles: [...new Set(u.admin_roles ?? [])].sort(),
            status: u.status ?? 'ACTIVE',
          });
        }
      }
    },
  },
  enrichment: {
    // Every kind: a match rule reads `enrichment.*` from the event, a scheduled one from its columns.
    kinds: [],
    apply: (entries, _c, d) => {
      const byIp = (d.enrichment ??= new Map());
      for (const raw of entries)
        for (const [ip, v] of Object.entries(raw as Record<string, unknown>)) {
          if (isIP(ip) === 0)
            throw new MockError(
              `mocks.enrichment: ${shownValue(ip, 60)} is not an IP address (keys are client.ipAddress values)`,
            );
          const e = boundEnrichment(v);
          if (e) byIp.set(ip.toLowerCase(), e);
        }
    },
  },
  lookups: {
    kinds: [],
    apply: () => {
      throw new MockError('mocks.lookups: rules cannot read lookup tables yet');
    },
  },
};

function lookupOf(users: ReadonlyMap<string, ActorContext>): ActorContextLookup {
  return { actor: (org, user) => users.get(identityKey(org, user)) };
}

/** Panther's returnValue: JSON in a string is parsed; '' , null and "None" are a write stub. */
function pantherValue(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const t = v.trim();
  if (t === '' || t === 'None' || t === 'null') return null;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return t;
  }
}

/**
 * Panther's `Mocks:` → `mocks:` for this rule. A list (get_string_set) is the
 * seen set of a first_seen rule; an object (get_dictionary) the previous
 * values of a stateful rule, its `time` (ISO-8601 or epoch seconds) the
 * previous event's time; an empty value stubs a write and is dropped.
 * Anything else names the mock that hooklog has no state for.
 */
export function pantherToMocks(
  list: readonly { objectName: string; returnValue?: unknown }[],
  rule: CompiledRule,
): Mocks {
  const out: { seen?: Mocks['seen']; previous?: Mocks['previous'] } = {};
  for (const m of list) {
    const v = pantherValue(m.returnValue);
    const name = shownValue(m.objectName, 60);
    if (v === null || (Array.isArray(v) && v.length === 0 && rule.kind !== 'first_seen')) continue;
    if (Array.isArray(v) && rule.kind === 'first_seen') {
      const values = v.filter((x): x is Scalar => x === null || typeof x !== 'object');
      // An empty set: the group has seen nothing (it is learning), as no mock says.
      if (values.length) out.seen = [...(out.seen ?? []), { values }];
      continue;
    }
    if (v && typeof v === 'object' && !Array.isArray(v) && rule.kind === 'stateful') {
      const { time, ...fields } = v as Record<string, unknown>;
      const at =
        typeof time === 'number'
          ? new Date(time < 1e11 ? time * 1000 : time).toISOString()
          : typeof time === 'string'
            ? time
            : undefined;
      const scalars = Object.fromEntries(
        Object.entries(fields).map(([k, x]) => [k, x === null || typeof x !== 'object' ? x : JSON.stringify(x)]),
      ) as Record<string, Scalar>;
      out.previous = [...(out.previous ?? []), { fields: scalars, ...(at !== undefined ? { at } : {}) }];
      continue;
    }
    throw new MockError(
      `mock ${name} returns ${shownValue(m.returnValue, 60)}: a ${rule.kind} rule reads ` +
        (rule.kind === 'first_seen'
          ? 'a seen set (a list)'
          : rule.kind === 'stateful'
            ? 'previous values (an object)'
            : 'no state a Panther mock stands for') +
        '; lookups are not built yet, and GeoIP answers are `mocks.enrichment`',
    );
  }
  return out as Mocks;
}

/** The state `spec.mocks` gives `rule`, or why it cannot (one line). */
export function mockedState(
  spec: CaseSpec,
  rule: CompiledRule,
  firstEvent: Readonly<Record<string, unknown>> | undefined,
  startMs: number,
): MockedState | { error: string } {
  if (spec.mocks === undefined) return {};
  try {
    const mocks = Array.isArray(spec.mocks) ? pantherToMocks(spec.mocks, rule) : (spec.mocks as Mocks);
    const c: MockContext = {
      rule,
      org: spec.org,
      startMs,
      firstKey: JSON.stringify(rule.groupBy.map((p) => (firstEvent ? firstString(firstEvent, p) : ''))),
    };
    const d: Draft = {};
    for (const name of Object.keys(MOCK_KINDS) as (keyof Mocks)[]) {
      const entries = mocks[name];
      if (entries === undefined) continue;
      const kind = MOCK_KINDS[name];
      if (kind.kinds.length && !kind.kinds.includes(rule.kind))
        throw new MockError(
          `mocks.${name} is state of ${kind.kinds.join(', ')} rules; ${rule.id} is a ${rule.kind} rule and reads none`,
        );
      kind.apply(Array.isArray(entries) ? entries : [entries], c, d);
    }
    return {
      ...(d.keyed ? { engine: { ...emptyState(), keyed: { [rule.id]: d.keyed } } } : {}),
      ...(d.scheduledSeen ? { scheduledSeen: d.scheduledSeen } : {}),
      ...(d.identity ? { identity: lookupOf(d.identity) } : {}),
      ...(d.enrichment ? { enrichment: mockLookup(d.enrichment) } : {}),
    };
  } catch (err) {
    if (err instanceof MockError) return { error: err.message };
    throw err;
  }
}

/** The mocked answers as a database: by address, each part as the City or the ASN database gives it. */
function mockLookup(byIp: ReadonlyMap<string, Enrichment>): GeoLookup {
  return {
    geo: (ip) => byIp.get(ip.toLowerCase())?.geo ?? null,
    asn: (ip) => byIp.get(ip.toLowerCase())?.asn ?? null,
  };
}
