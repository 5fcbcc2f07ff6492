/**
 * A rule's `title`, `severity`, `dedup` and `dedup_period`, checked and
 * compiled together: which kinds may group or compute labels, and how they
 * meet suppression. Mistakes fail at load, naming the rule and the key.
 */
import { AlertingError } from '../errors.js';
import { durationMs } from '../cases/schema.js';
import { compileLabels, severityName, type CompiledLabels, type Severity } from './labels.js';

export interface GroupingSpec {
  readonly id: string;
  readonly type: string;
  readonly title: string;
  readonly severity: string;
  readonly dedup?: string | undefined;
  readonly dedup_period?: string | number | undefined;
  readonly suppress_ms?: number | undefined;
  readonly fields: Readonly<Record<string, string>>;
  readonly time_zone: string;
}

export interface CompiledGrouping {
  /** The rule's title as written (a template's text; default the id) and its severity (an expression's: medium). */
  readonly title: string;
  readonly severity: Severity;
  /** Present when a label is computed per event. */
  readonly labels?: CompiledLabels;
  /** Present when findings group. */
  readonly periodMs?: number;
}

/** The dedup_period when a rule sets `dedup` alone: the anchor's (Panther's) default of 60 minutes. */
export const DEFAULT_DEDUP_PERIOD_MS = 3_600_000;
const MIN_PERIOD_MS = 1000;
const MAX_PERIOD_MS = 7 * 86_400_000;

/** Whether `v` is a dedup_period: a duration (`15m`, `1h`, or ms) from 1 s to 7 days. */
export function isDedupPeriod(v: unknown): boolean {
  const ms = durationMs(v);
  return ms !== null && ms >= MIN_PERIOD_MS && ms <= MAX_PERIOD_MS;
}

export function compileGrouping(
  spec: GroupingSpec,
  where: string,
  o: { readonly literalTitle?: boolean },
): CompiledGrouping {
  const fail = (m: string): never => {
    throw new AlertingError('rule_invalid', `${where}: ${m}`);
  };
  const groups = spec.dedup !== undefined || spec.dedup_period !== undefined;
  if (groups && (spec.type === 'absence' || spec.type === 'scheduled'))
    fail(
      `dedup and dedup_period group findings of events; a${spec.type === 'absence' ? 'n absence' : ' scheduled'} rule's findings are ${spec.type === 'absence' ? 'silences' : 'result rows, alerted once per key already'}`,
    );
  if (groups && spec.suppress_ms !== undefined)
    fail(
      'suppress_ms and dedup/dedup_period do not go together: a grouped alert counts the findings suppression drops',
    );
  const labels = compileLabels({
    title: spec.title || spec.id,
    severity: spec.severity,
    ...(spec.dedup !== undefined ? { dedup: spec.dedup } : {}),
    fields: new Set(Object.keys(spec.fields)),
    prev: spec.type === 'stateful',
    timeZone: spec.time_zone,
    where,
    ...(o.literalTitle ? { literalTitle: true } : {}),
  });
  if (!labels.constant && spec.type === 'absence')
    fail('an absence finding has no event: its title and severity must be constant');
  const fixedSeverity = severityName(spec.severity);
  return {
    title: spec.title || spec.id,
    severity: fixedSeverity ?? 'medium',
    ...(labels.constant ? {} : { labels }),
    ...(groups ? { periodMs: durationMs(spec.dedup_period ?? DEFAULT_DEDUP_PERIOD_MS)! } : {}),
  };
}
