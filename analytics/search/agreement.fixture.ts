/**
 * Test support for "search and a match rule agree": events (generated here, or
 * the corpus's), filters generated from the values those events hold (every
 * operator, nested with and/or/not, keys in any case), and the check itself:
 * an event is in the search's result iff the same filter, evaluated as the
 * alerting engine does (consumers/alerting/filter/evaluate.ts), matches it.
 */
import { compileFilter } from '../../consumers/alerting/filter/evaluate.js';
import { attachEnrichment, type Enrichment } from '../../platform/enrichment/enrichment.js';
import type { Principal } from '../../platform/access.js';
import type { Store } from '../../platform/store/index.js';
import { search } from './search.js';

/** A deterministic generator (mulberry32), so a failure names its seed and reproduces. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

/** Text an attacker may put in any field: quotes, backslashes, SQL, comment markers, unicode, controls. */
export const HOSTILE = [
  `x') OR 1=1 --`,
  `'; DROP TABLE events_v4; --`,
  `a"b`,
  `back\\slash`,
  `\\'`,
  `/* c */`,
  `-- tail`,
  `# hash`,
  `{org:String}`,
  `{f0:String}`,
  `Ünïcödé Äpp`,
  `日本語のアプリ`,
  `emoji 🙂 app`,
  `\u202eecnarf`,
  `tab\there`,
  `line\nbreak`,
  `SELECT * FROM system.tables`,
  `UNION ALL SELECT 1`,
  `%_like_%`,
  `$1 ?`,
];

const TYPES = ['user.session.start', 'user.authentication.sso', 'user.mfa.factor.deactivate', 'policy.rule.update'];
const RESULTS = ['SUCCESS', 'FAILURE', 'DENY', 'success'];
const NAMES = ['Okta Admin Console', 'AWS Console', 'Salesforce', 'Bob', 'alice', ...HOSTILE];

/** `n` LogEvents of `org` after `base`, varied where filters look: absent, null, lists, numbers, JSON text. */
export function generatedEvents(seed: number, n: number, org: string, base = Date.parse('2026-03-02T10:00:00Z')) {
  const r = prng(seed);
  const out: Array<{ org: string; event: Record<string, unknown>; enrichment?: Enrichment }> = [];
  for (let i = 0; i < n; i++) {
    const e: Record<string, unknown> = {
      uuid: `${org}-${seed}-${i}`,
      published: new Date(base + Math.floor(r() * 6 * 3_600_000)).toISOString(),
      eventType: pick(r, TYPES),
      actor: {
        id: `00u${Math.floor(r() * 5)}`,
        type: 'User',
        alternateId: `${pick(r, ['alice', 'Bob', 'carol', 'Ünïcödé'])}@example.com`,
        displayName: pick(r, NAMES),
      },
      client: {
        ipAddress: pick(r, ['198.51.100.7', '203.0.113.1', '2001:db8::1']),
        userAgent: { os: pick(r, ['Mac OS X', 'Windows', 'iOS']) },
      },
    };
    const o = r();
    if (o < 0.6) e.outcome = { result: pick(r, RESULTS), ...(r() < 0.5 ? { reason: pick(r, NAMES) } : {}) };
    else if (o < 0.8) e.outcome = null;
    const targets = Math.floor(r() * 4);
    if (targets > 0 || r() < 0.5)
      e.target = Array.from({ length: targets }, (_, t) => ({
        id: `t${t}${Math.floor(r() * 3)}`,
        type: pick(r, ['User', 'AppInstance']),
        displayName: pick(r, NAMES),
      }));
    const data: Record<string, unknown> = {};
    if (r() < 0.6) data.count = r() < 0.7 ? Math.floor(r() * 20) : String(Math.floor(r() * 20));
    if (r() < 0.5) data.risk = `{level=${pick(r, ['LOW', 'MEDIUM', 'HIGH'])}, reasons=${pick(r, NAMES)}}`;
    if (r() < 0.3) data.behaviors = JSON.stringify({ newDevice: pick(r, ['POSITIVE', 'NEGATIVE']) });
    if (Object.keys(data).length > 0 || r() < 0.3) e.debugContext = { debugData: data };
    const p = r();
    if (p < 0.4) e.securityContext = { isProxy: r() < 0.5 };
    else if (p < 0.6) e.securityContext = { isProxy: null };
    if (r() < 0.3) e.displayMessage = pick(r, NAMES);
    // hooklog's GeoIP answer (the record header, platform/enrichment/), in part or whole, and now and then a key
    // of the event's own named like it, which neither search nor rules may read.
    const enrichment: { geo?: Record<string, unknown>; asn?: Record<string, unknown> } = {};
    if (r() < 0.6)
      enrichment.geo = {
        country: pick(r, ['FR', 'JP', 'us']),
        ...(r() < 0.7 ? { city: pick(r, ['Paris', 'Tokyo', ...NAMES]) } : {}),
        ...(r() < 0.7
          ? { lat: Math.round((r() * 180 - 90) * 1e4) / 1e4, lon: Math.round((r() * 360 - 180) * 1e4) / 1e4 }
          : {}),
      };
    if (r() < 0.5)
      enrichment.asn = {
        number: pick(r, [64500, 64501, 13335, 4294967295]),
        ...(r() < 0.7 ? { organization: pick(r, NAMES) } : {}),
      };
    if (r() < 0.2) e.enrichment = { geo: { country: 'ZZ', city: 'Own' }, asn: { number: 1 } };
    out.push({ org, event: e, ...(enrichment.geo || enrichment.asn ? { enrichment: enrichment as Enrichment } : {}) });
  }
  return out;
}

/** The event as the rule engine sees it: its enrichment attached (the consumer's attachEnrichment), on a copy. */
export function engineView(g: { event: Record<string, unknown>; enrichment?: Enrichment }): Record<string, unknown> {
  const e = { ...g.event };
  attachEnrichment(e, g.enrichment ?? null);
  return e;
}

/** Every (path, value) of `e`'s scalar leaves, list positions dropped (a path through a list reads every element). */
function leaves(v: unknown, path: string[] = [], out: Array<[string, unknown]> = []): Array<[string, unknown]> {
  if (Array.isArray(v)) for (const x of v) leaves(x, path, out);
  else if (v !== null && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) {
      // Only keys a filter can write (and that are no list positions).
      if (/^[A-Za-z_$][A-Za-z0-9_$:-]*$/.test(k)) leaves(x, [...path, k], out);
    }
  else if (path.length > 0) out.push([path.join('.'), v]);
  return out;
}

const OPS = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le', 'pr', 'in', 'eqnull', 'nenull'] as const;
/** Every operator a generated filter uses: the differential test checks each is covered. */
export type GenOp = (typeof OPS)[number];

const lit = (v: unknown) => (typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(String(v)));

function twiddle(r: () => number, s: string): string {
  const c = r();
  return c < 0.3 ? s.toUpperCase() : c < 0.6 ? s.toLowerCase() : s;
}

/** `n` filters over the values `events` hold, each leaf one operator; `used` counts each operator's leaves. */
export function generatedFilters(
  seed: number,
  n: number,
  events: ReadonlyArray<Record<string, unknown>>,
): { filters: string[]; used: Map<GenOp, number> } {
  const r = prng(seed);
  const pool = events.flatMap((e) => leaves(e));
  const used = new Map<GenOp, number>();
  const leaf = (): string => {
    const [path0, v] = pick(r, pool);
    // Keys are case-insensitive in both: write some in another case.
    const path = r() < 0.2 ? twiddle(r, path0) : path0;
    const op = pick(r, OPS);
    used.set(op, (used.get(op) ?? 0) + 1);
    const text = v === null ? 'x' : String(v);
    switch (op) {
      case 'pr':
        return `${path} pr`;
      case 'eqnull':
        return `${path} eq null`;
      case 'nenull':
        return `${path} ne null`;
      case 'in':
        return `${path} in [${[v, pick(r, pool)[1], pick(r, NAMES)].map((x) => (x === null ? 'null' : lit(x))).join(', ')}]`;
      case 'co':
      case 'sw':
      case 'ew': {
        const a = Math.floor(r() * text.length);
        const b = a + 1 + Math.floor(r() * (text.length - a));
        const part = op === 'sw' ? text.slice(0, b) : op === 'ew' ? text.slice(a) : text.slice(a, b);
        return `${path} ${op} ${JSON.stringify(twiddle(r, part || text))}`;
      }
      case 'gt':
      case 'ge':
      case 'lt':
      case 'le':
        if (typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v)))
          return `${path} ${op} ${Number(v) + pick(r, [-1, 0, 1])}`;
        return `${path} ${op} ${lit(v === null ? 'm' : v)}`;
      default:
        return `${path} ${op} ${typeof v === 'string' ? JSON.stringify(twiddle(r, v)) : lit(v ?? 'x')}`;
    }
  };
  const tree = (depth: number): string => {
    const c = r();
    if (depth === 0 || c < 0.4) return leaf();
    if (c < 0.55) return `not (${tree(depth - 1)})`;
    const joiner = c < 0.8 ? ' and ' : ' or ';
    return `(${tree(depth - 1)}${joiner}${tree(depth - 1)})`;
  };
  return { filters: Array.from({ length: n }, () => tree(2)), used };
}

/**
 * The filters on which search (over `store`, for `org`) and the alerting engine (over `events`) disagree,
 * each with the uuids only one of them found.
 */
export async function disagreements(
  store: Store,
  principal: Principal,
  org: string,
  range: { since: number; until: number },
  events: ReadonlyArray<Record<string, unknown>>,
  filters: readonly string[],
): Promise<Array<{ filter: string; onlySearch: string[]; onlyRule: string[] }>> {
  const out: Array<{ filter: string; onlySearch: string[]; onlyRule: string[] }> = [];
  for (const filter of filters) {
    const rule = compileFilter(filter);
    const want = new Set(events.filter((e) => rule(e)).map((e) => String(e.uuid)));
    const got = new Set<string>();
    let after: string | undefined;
    do {
      const page = await search(store, principal, { filter, org, ...range, fields: ['uuid'], limit: 1000, after });
      for (const row of page.rows) got.add(String(row.uuid));
      after = page.next;
    } while (after);
    const onlySearch = [...got].filter((u) => !want.has(u));
    const onlyRule = [...want].filter((u) => !got.has(u));
    if (onlySearch.length + onlyRule.length > 0) out.push({ filter, onlySearch, onlyRule });
  }
  return out;
}
