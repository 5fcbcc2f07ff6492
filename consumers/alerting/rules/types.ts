/**
 * hooklog's own rule language. Predicates reuse Sigma's detection syntax
 * (selections + condition, see sigma/detection.ts), so there is one way to
 * say "which events", and rule kinds add what happens across events:
 *
 * - match: every matching event is a finding;
 * - threshold: ≥ `threshold` matching events per group within `window_ms`;
 * - distinct: ≥ `threshold` distinct values of `distinct_field` per group within `window_ms`;
 * - sequence: an event matching `first` then one matching `then`, same group, within `window_ms`;
 * - absence: no matching event from an org for `window_ms` (the silent org).
 *
 * Time is event time (`published`). Groups are always scoped to the org.
 */
import { z } from 'zod';
import type { Predicate } from '../sigma/detection.js';

const detection = z.union([z.record(z.string(), z.unknown()), z.string().min(1)])
  .describe('Which events: a Sigma-style detection (named selections and a `condition`), or a System Log filter expression (`eventType eq "…" and …`).');

export const ruleSpecSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/).describe('Stable rule id; part of every alert id, so never reuse one for other logic.'),
  title: z.string().default('').describe('Human title for alerts.'),
  severity: z.enum(['informational', 'low', 'medium', 'high', 'critical']).default('medium').describe('Severity carried by alerts.'),
  type: z.enum(['match', 'threshold', 'distinct', 'sequence', 'absence']).default('match').describe('Rule kind (see module doc).'),
  detection: detection.optional().describe('Which events count (match, threshold, distinct, absence). Absence defaults to every event.'),
  first: detection.optional().describe('Sequence: the first step.'),
  then: detection.optional().describe('Sequence: the step that must follow `first` within window_ms.'),
  group_by: z.array(z.string().min(1)).default([]).describe('Field paths forming the group key (beside the org).'),
  window_ms: z.number().int().min(1).optional().describe('Window length in event time (threshold, distinct, sequence, absence).'),
  threshold: z.number().int().min(1).default(1).describe('Events (or distinct values) needed within the window.'),
  distinct_field: z.string().min(1).optional().describe('Distinct: the field whose distinct values are counted.'),
  suppress_ms: z.number().int().min(0).optional().describe('After an alert for (rule, key), further findings within this long (event time) are suppressed. Default: alerting.suppression_ms.'),
});

export type RuleSpec = z.infer<typeof ruleSpecSchema>;
export type RuleKind = RuleSpec['type'];
export type Severity = RuleSpec['severity'];

/** A rule ready to evaluate: paths split, predicates compiled, defaults applied. */
export interface CompiledRule {
  readonly id: string;
  readonly title: string;
  readonly severity: Severity;
  readonly kind: RuleKind;
  /** Where the rule came from (file path or `config`), for error messages and alerts. */
  readonly source: string;
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
}
