/**
 * hooklog's own rule language. Predicates reuse Sigma's detection syntax
 * (selections + condition, see sigma/detection.ts), so there is one way to
 * say "which events", and rule kinds add what happens across events:
 *
 * - match: every matching event is a finding;
 * - threshold: ≥ `threshold` matching events per group within `window_ms`;
 * - distinct: ≥ `threshold` distinct values of `distinct_field` per group within `window_ms`;
 * - sequence: an event matching `first` then one matching `then`, same group, within `window_ms`;
 * - absence: no matching event from an org for `window_ms` (the silent org);
 * - stateful: each matching event is compared with the previous one of its
 *   group (`when:` over `fields` and `prev.*`, see state/expr.ts);
 * - first_seen: a value of `distinct_field` not seen for the group within
 *   `window_ms` before (a group with no history yet is learning, not alerting);
 * - scheduled: `sql` (or a named analytics `query`) run every `every_ms` over
 *   ClickHouse with a `lookback_ms`; one alert per result row whose `key`
 *   columns were not alerted before (scheduled.ts).
 *
 * Time is event time (`published`). Groups are always scoped to the org.
 */
import { z } from 'zod';
import type { FieldPath } from '../fields.js';
import type { Predicate } from '../sigma/detection.js';
import type { Expr, Value } from '../state/expr.js';
import type { Explained } from './explain.js';
import type { CompiledLabels, Severity } from '../grouping/labels.js';
import { isDedupPeriod } from '../grouping/declaration.js';
import { riskDeclarationSchema, type CompiledRisk } from '../risk/declaration.js';

const detection = z
  .union([z.record(z.string(), z.unknown()), z.string().min(1)])
  .describe(
    'Which events: a Sigma-style detection (named selections and a `condition`), or a System Log filter expression (`eventType eq "…" and …`).',
  );

export const ruleSpecSchema = z.strictObject({
  id: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/)
    .describe('Stable rule id; part of every alert id, so never reuse one for other logic.'),
  title: z
    .string()
    .max(2000)
    .default('')
    .describe(
      'Human title for alerts; `{{ expression }}` placeholders are computed from each event (grouping/labels.ts), e.g. "Failures for {{ actor.alternateId }}". Default: the id.',
    ),
  severity: z
    .string()
    .min(1)
    .max(2000)
    .default('medium')
    .describe(
      "Severity carried by alerts: informational, low, medium, high or critical, or an expression over the event naming one (`if(actor.type == 'SuperAdmin', 'critical', 'high')`; any other value gives medium).",
    ),
  type: z
    .enum(['match', 'threshold', 'distinct', 'sequence', 'absence', 'stateful', 'first_seen', 'scheduled', 'temporal'])
    .default('match')
    .describe('Rule kind (see module doc).'),
  detection: detection
    .optional()
    .describe('Which events count (match, threshold, distinct, absence). Absence defaults to every event.'),
  first: detection.optional().describe('Sequence: the first step.'),
  then: detection.optional().describe('Sequence: the step that must follow `first` within window_ms.'),
  group_by: z.array(z.string().min(1)).default([]).describe('Field paths forming the group key (beside the org).'),
  window_ms: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('Window length in event time (threshold, distinct, sequence, absence).'),
  threshold: z.number().int().min(1).default(1).describe('Events (or distinct values) needed within the window.'),
  distinct_field: z.string().min(1).optional().describe('Distinct: the field whose distinct values are counted.'),
  fields: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string().min(1))
    .default({})
    .describe('Named values read from each event by field path, for `when` (and kept per group by stateful rules).'),
  when: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Condition over `fields`, `time` and (stateful) `prev.*`: arithmetic, comparisons, km(), hour()/weekday() in time_zone (state/expr.ts).',
    ),
  time_zone: z.string().default('UTC').describe('IANA time zone for hour(), minute() and weekday().'),
  max_keys: z
    .number()
    .int()
    .min(1)
    .max(10_000_000)
    .default(100_000)
    .describe('Stateful and first_seen: most groups remembered; beyond it the least recently seen group is forgotten.'),
  max_values: z
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(1000)
    .describe('first_seen: most values remembered per group (least recently seen forgotten).'),
  ttl_ms: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('Stateful: a previous event older than this is forgotten (no prev). Default 30 days.'),
  sql: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Scheduled: read-only SQL over ClickHouse; {since:DateTime64(3, 'UTC')}, {until:…} and `params` are bound, {db} is the database; must return an `org` column.",
    ),
  query: z
    .string()
    .min(1)
    .optional()
    .describe('Scheduled: a named analytics query (hooklog query --list), run per org with events in the range.'),
  params: z
    .record(z.string(), z.union([z.string(), z.number()]))
    .default({})
    .describe('Scheduled: further query parameters.'),
  every_ms: z
    .number()
    .int()
    .min(1000)
    .optional()
    .describe('Scheduled: how often it runs (runs are aligned to multiples of it).'),
  lookback_ms: z
    .number()
    .int()
    .min(1000)
    .optional()
    .describe('Scheduled: each run covers [run time − lookback_ms, run time).'),
  key: z
    .array(z.string().min(1))
    .default([])
    .describe(
      'Scheduled: result columns identifying a finding (with org); a row whose key was alerted is not alerted again.',
    ),
  time_column: z
    .string()
    .default('event_time')
    .describe("Scheduled: result column giving the finding's event time (default: the run time)."),
  tags: z
    .array(z.string().min(1).max(200))
    .max(100)
    .default([])
    .describe(
      'Labels for selecting rules (`hooklog rules test --cases --tag credential-access`); Sigma rules keep their own `tags:`.',
    ),
  cases: z
    .array(z.unknown())
    .optional()
    .describe(
      'Labelled examples run by `hooklog rules test --cases` (consumers/alerting/cases/schema.ts); the engine ignores them.',
    ),
  suppress_ms: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      'After an alert for (rule, key), further findings within this long (event time) are suppressed. Default: alerting.suppression_ms.',
    ),
  dedup: z
    .string()
    .min(1)
    .max(2000)
    .optional()
    .describe(
      "Groups findings into one alert per dedup text and period: an expression over the event (`lower(actor.alternateId)`). Default, when dedup_period is set: the rule's group key.",
    ),
  dedup_period: z
    .union([z.number(), z.string()])
    .refine(isDedupPeriod, 'expected a duration from 1s to 7d: 30s, 15m, 1h, 1d, or milliseconds')
    .optional()
    .describe(
      'How long (event time, from its first finding) a grouped alert takes further findings of its group: 30s, 15m, 1h, 1d. Default 1h when `dedup` is set; setting it alone groups by the group key.',
    ),
  risk: riskDeclarationSchema
    .optional()
    .describe("What a finding means for the user's risk level (risk/declaration.ts): { level, ttl, reason }."),
});

export type RuleSpec = z.infer<typeof ruleSpecSchema>;
export type RuleKind = RuleSpec['type'];
export type { Severity } from '../grouping/labels.js';

/** A rule ready to evaluate: paths split, predicates compiled, defaults applied. */
export interface CompiledRule {
  readonly id: string;
  readonly title: string;
  readonly severity: Severity;
  readonly kind: RuleKind;
  /** Where the rule came from (file path or `config`), for error messages and alerts. */
  readonly source: string;
  /** The rule's `tags:` (Sigma's own), for selecting rules; absent or empty when it has none. */
  readonly tags?: readonly string[];
  /**
   * The detection as a tree of conditions with what one event made of each (rules/explain.ts), for a
   * failing test case; built on first use. A stateful rule's `when` is in it when `prev` (the group's previous
   * event's fields and time, null for none) is given. Absent where a rule has nothing to explain.
   */
  readonly explain?: (event: unknown, prev?: Readonly<Record<string, Value>> | null) => Explained;
  readonly where: Predicate;
  /** The System Log filter text when `detection` was written as one (hunts compile it to SQL). */
  readonly filter?: string;
  readonly then: Predicate;
  readonly groupBy: readonly (readonly string[])[];
  readonly windowMs: number;
  readonly threshold: number;
  readonly distinct: readonly string[] | null;
  readonly suppressMs: number;
  /** Sequence only: `any` when either step may come first (Sigma `near`). */
  readonly order: 'ordered' | 'any';
  /** Named values read from each event (stateful, first_seen, `when`). */
  readonly fields: readonly (readonly [string, FieldPath])[];
  /** Stateful and first_seen: the condition (other kinds fold `when` into `where`). */
  readonly when: Expr | null;
  readonly maxKeys: number;
  readonly maxValues: number;
  readonly ttlMs: number;
  /** Scheduled rules only. */
  readonly scheduled?: ScheduledSpec;
  /** What a finding means for a user's risk (the rule's `risk:`, or alerting.risk.rules). */
  readonly risk?: CompiledRisk;
  /** Per-event title, severity and dedup text; absent when all are constant (`title`, `severity` above). */
  readonly labels?: CompiledLabels;
  /** Findings group into one alert per group and period (grouping/groups.ts); absent: one alert per finding. */
  readonly dedupPeriodMs?: number;
  /**
   * Temporal correlations (Sigma `temporal`, `temporal_ordered`): one step per base rule, each with its group fields.
   */
  readonly steps?: readonly { readonly where: Predicate; readonly groupBy: readonly FieldPath[] }[];
}

export interface ScheduledSpec {
  readonly sql?: string;
  readonly query?: string;
  readonly params: Readonly<Record<string, string | number>>;
  readonly textParams: Readonly<Record<string, string>>;
  readonly everyMs: number;
  readonly lookbackMs: number;
  readonly key: readonly string[];
  readonly timeColumn: string;
}
