/**
 * From a search to a rule: the hooklog rule file (consumers/alerting/rules/types.ts, cases/schema.ts) that the
 * Search page's "Make a rule" downloads — the page's filter as the rule's `detection`, its group-by, and one test
 * case per event the analyst marked, carrying the event as it was stored. Pure: the route (make-rule.ts) reads
 * the events and runs the cases before anything is sent.
 *
 * Every value here but the kind, the numbers and the case names comes from an event or from the analyst, so the
 * file is written only by the yaml library's serializer (never by concatenation): strings double-quoted (no
 * `yes`, `null`, `!!js/function` or `&anchor` read back as anything but text, in any YAML reader), and a key
 * spelled `<<` quoted too, since the cases' loader reads plain `<<` as a merge key.
 */
import { Document, isScalar, Scalar, visit } from 'yaml';
import { FilterSyntaxError, parseFilter } from '../platform/filter/parse.js';
import { lookupFieldPath } from '../schemas/logevent-fields.js';
import { ParamError } from './range.js';

/** A rule id, as the rule schema has it (consumers/alerting/rules/types.ts): the file's name too. */
const RULE_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const FIELD_PATH = /^[A-Za-z_$][A-Za-z0-9_$:-]*(\.[A-Za-z0-9_$:-]+)*$/;
const UUID_TEXT = /^[\x21-\x7e]{1,200}$/;

/** Bounds on one request: each well above what an analyst marks by hand, and keeping the check of the cases cheap. */
export const RULE_LIMITS = {
  /** Marked events, both marks together. */
  marks: 50,
  groupBy: 5,
  threshold: 1000,
  windowMinutes: 7 * 24 * 60,
  filterChars: 4096,
  /** Event bytes the cases send (each marked event's raw JSON × the copies a threshold case sends). */
  caseBytes: 64 * 1024 * 1024,
} as const;

/** The defaults of a rule with a group-by (a threshold rule), when the page sets none. */
export const RULE_DEFAULTS = { threshold: 5, windowMinutes: 10 } as const;

export type Mark = 'alert' | 'quiet';

export interface RuleRequest {
  readonly org: string;
  readonly id: string;
  readonly filter: string;
  readonly groupBy: readonly string[];
  /** 1 with no group-by: a match rule. */
  readonly threshold: number;
  readonly windowMs: number;
  /** The marked events' uuids in the order marked, should-alert first. */
  readonly marks: ReadonlyArray<{ readonly uuid: string; readonly mark: Mark }>;
}

const list = (s: string | undefined): string[] => (s ? s.split(',').filter((x) => x !== '') : []);

function whole(q: Record<string, string>, name: string, min: number, max: number, dflt: number): number {
  const v = q[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new ParamError(name, `must be a whole number from ${min} to ${max}`);
  return n;
}

/** The request of `GET /console/api/search/rule`, checked: every mistake names its parameter. */
export function parseRuleRequest(q: Record<string, string>): RuleRequest {
  if (!q.org || q.org === '*') throw new ParamError('org', 'the org of the marked events (one org)');
  const id = q.name ?? '';
  if (!RULE_ID.test(id))
    throw new ParamError(
      'name',
      'a rule id: a letter or digit, then letters, digits and . _ : - (at most 128), e.g. acme.signin.failures',
    );
  const filter = q.filter ?? '';
  if (filter.trim() === '') throw new ParamError('filter', 'a rule needs a filter: search with one first');
  if (filter.length > RULE_LIMITS.filterChars)
    throw new ParamError('filter', `at most ${RULE_LIMITS.filterChars} characters`);
  try {
    parseFilter(filter);
  } catch (err) {
    if (!(err instanceof FilterSyntaxError)) throw err;
    throw new ParamError('filter', `column ${err.offset + 1}: ${err.message.replace(/ at \d+$/, '')}`);
  }
  const groupBy = list(q.group_by);
  if (groupBy.length > RULE_LIMITS.groupBy) throw new ParamError('group_by', `at most ${RULE_LIMITS.groupBy} fields`);
  for (const f of groupBy) {
    const v = FIELD_PATH.test(f) ? lookupFieldPath(f.toLowerCase().split('.')) : undefined;
    if (!v || !(v.known || (!v.never && v.at > 0)))
      throw new ParamError('group_by', `${JSON.stringify(f.slice(0, 100))} is not a field of an event`);
  }
  const threshold = whole(q, 'threshold', 1, RULE_LIMITS.threshold, groupBy.length ? RULE_DEFAULTS.threshold : 1);
  const windowMinutes = whole(q, 'window', 1, RULE_LIMITS.windowMinutes, RULE_DEFAULTS.windowMinutes);
  const alert = list(q.alert);
  const quiet = list(q.quiet);
  if (alert.length === 0) throw new ParamError('alert', 'mark at least one event that should alert');
  if (alert.length + quiet.length > RULE_LIMITS.marks)
    throw new ParamError('alert', `at most ${RULE_LIMITS.marks} marked events`);
  for (const [name, ids] of [
    ['alert', alert],
    ['quiet', quiet],
  ] as const)
    if (ids.some((u) => !UUID_TEXT.test(u))) throw new ParamError(name, 'event ids, comma-separated');
  const both = alert.find((u) => quiet.includes(u));
  if (both !== undefined)
    throw new ParamError('quiet', `event ${both} is marked both "should alert" and "should not alert"`);
  return {
    org: q.org,
    id,
    filter,
    groupBy,
    threshold,
    windowMs: windowMinutes * 60_000,
    marks: [
      ...[...new Set(alert)].map((uuid) => ({ uuid, mark: 'alert' as const })),
      ...[...new Set(quiet)].map((uuid) => ({ uuid, mark: 'quiet' as const })),
    ],
  };
}

/** A marked event as stored: its JSON as received, and its `published` (epoch ms) for an event without its own. */
export interface StoredEvent {
  readonly uuid: string;
  readonly raw: string;
  readonly publishedMs: number;
}

/** The name of the case made from the `i`th marked event (the route maps a failing case back by it). */
export const caseName = (i: number, m: RuleRequest['marks'][number]): string =>
  `${m.mark === 'alert' ? 'should alert' : 'should not alert'} #${i + 1}: event ${m.uuid}`;

/**
 * The rule as hooklog reads it. No group-by and threshold 1: a `match` rule, each case the event alone.
 * Otherwise a `threshold` rule: each case sends its event `threshold` times (one copy its own, stored `uuid`
 * and `published`, the rest a derived uuid) within the window, so a should-alert event alerts by itself and a
 * should-not-alert one stays quiet because the filter does not take it, not for want of company.
 */
export function ruleOf(r: RuleRequest, events: ReadonlyMap<string, StoredEvent>): Record<string, unknown> {
  const counted = r.groupBy.length > 0 || r.threshold > 1;
  // Copies spread over less than the window: (threshold − 1) × every < window.
  const every = `${Math.max(1, Math.floor(r.windowMs / r.threshold))}ms`;
  const cases = r.marks.map((m, i) => {
    const e = events.get(m.uuid)!;
    const event = JSON.parse(e.raw) as Record<string, unknown>;
    return {
      name: caseName(i, m),
      alert: m.mark === 'alert',
      org: r.org,
      // The time of an event without a valid `published` of its own: the one it was stored with.
      at: new Date(e.publishedMs).toISOString(),
      ...(counted ? { events: [{ event, repeat: r.threshold, every }] } : { event }),
    };
  });
  return {
    id: r.id,
    title: r.id,
    severity: 'medium',
    type: counted ? 'threshold' : 'match',
    detection: r.filter,
    ...(counted ? { threshold: r.threshold, window_ms: r.windowMs, group_by: [...r.groupBy] } : {}),
    tags: ['from-search'],
    cases,
  };
}

/** Bytes of event JSON the cases send: bounded (RULE_LIMITS.caseBytes) before the cases run. */
export function caseBytes(r: RuleRequest, events: ReadonlyMap<string, StoredEvent>): number {
  let n = 0;
  for (const e of events.values()) n += Buffer.byteLength(e.raw) * r.threshold;
  return n;
}

/** The rule file: a list holding the rule, written by the serializer (see the module comment). */
export function ruleFileText(rule: Record<string, unknown>): string {
  const doc = new Document([rule]);
  doc.commentBefore =
    ' Made from a search in the hooklog console. Test it: hooklog rules test --cases <this file>\n' +
    ' Load it with alerting.rule_files or rule_paths (docs/detect/rules.md).';
  visit(doc, {
    Pair(_, pair) {
      if (isScalar(pair.key) && pair.key.value === '<<') pair.key.type = Scalar.QUOTE_DOUBLE;
    },
  });
  return doc.toString({ lineWidth: 0, defaultStringType: 'QUOTE_DOUBLE', defaultKeyType: 'PLAIN' });
}
