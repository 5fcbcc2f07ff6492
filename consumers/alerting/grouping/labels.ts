/**
 * A finding's title, severity and dedup string, computed from its event (the
 * anchor's `title()`, `severity()` and `dedup()`), in the expression language
 * of `when` (state/expr.ts), where a name that is not one of the rule's
 * `fields` is an event field path:
 *
 *   title: "Sign-in failures for {{ actor.alternateId }} from {{ client.ipAddress }}"
 *   severity: "if(actor.type == 'SuperAdmin', 'critical', 'high')"
 *   dedup: "lower(actor.alternateId)"
 *
 * - `title`: text with `{{ expression }}` placeholders; a title without `{{`
 *   is constant (as every title was). Event values are attacker-chosen: each
 *   placeholder shows at most MAX_VALUE_CHARS characters, control and
 *   invisible characters as `⟨U+202E⟩`, and the title at most MAX_TITLE_CHARS.
 * - `severity`: one of the five severities (constant), or an expression whose
 *   value names one (any case; `info` is informational). Any other value, null
 *   included, gives `medium`, the default severity.
 * - `dedup`: an expression whose text (null: '') groups the rule's findings
 *   (grouping/groups.ts); absent, a finding's group is its rule and group key.
 *
 * Pure, as the engine is: the same event gives the same labels.
 */
import { AlertingError } from '../errors.js';
import { compilePath, type FieldPath } from '../fields.js';
import { compileExpr, type Expr, type ExprContext, type Value } from '../state/expr.js';

/** Severities, lowest first. */
export const SEVERITIES = ['informational', 'low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** The most characters of one event value a title shows. */
export const MAX_VALUE_CHARS = 100;
/** The most characters of a title (and of the dedup text an alert carries). */
export const MAX_TITLE_CHARS = 200;

export interface Labels {
  readonly title: string;
  readonly severity: Severity;
  /** The dedup text (unbounded: it identifies the group); null when the rule has no `dedup`. */
  readonly dedup: string | null;
}

export interface CompiledLabels {
  /** Event paths the expressions read: the caller puts each value in `cur` under its name (readFields). */
  readonly paths: readonly (readonly [string, FieldPath])[];
  /** Whether every label is constant (no event needed). */
  readonly constant: boolean;
  of(ctx: ExprContext): Labels;
}

export interface LabelSpec {
  readonly title: string;
  readonly severity: string;
  readonly dedup?: string;
  /** The rule's `fields` (names the expressions may use besides event paths). */
  readonly fields: ReadonlySet<string>;
  /** Stateful rules: `prev.` may be used. */
  readonly prev: boolean;
  readonly timeZone: string;
  readonly where: string;
  /** Rules loaded as published (Sigma, the catalogue): their titles are text, never templates. */
  readonly literalTitle?: boolean;
}

const SEVERITY_ALIASES: Readonly<Record<string, Severity>> = { info: 'informational' };

/** A constant severity's name, else null (the text is an expression). */
export function severityName(text: string): Severity | null {
  const t = text.trim().toLowerCase();
  return (SEVERITIES as readonly string[]).includes(t) ? (t as Severity) : null;
}

/** Shows a character that would be invisible or steer the text (controls, bidi, zero-width) as `⟨U+XXXX⟩`. */
export function visibleText(s: string): string {
  return s.replace(
    /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
    (c) => `⟨U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`,
  );
}

/** At most `max` characters (code points), the last one `…` when cut. */
export function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  const cps = Array.from(s);
  return cps.length <= max ? s : `${cps.slice(0, max - 1).join('')}…`;
}

const text = (v: Value): string => (v === null ? '' : String(v));

type Part = string | Expr;

function compileTitle(src: string, o: LabelSpec, paths: Set<string>): Part[] {
  if (o.literalTitle || !src.includes('{{')) return [src];
  const parts: Part[] = [];
  let at = 0;
  while (at < src.length) {
    const open = src.indexOf('{{', at);
    if (open < 0) {
      parts.push(src.slice(at));
      break;
    }
    const close = src.indexOf('}}', open + 2);
    if (close < 0) throw new AlertingError('rule_invalid', `${o.where}.title: "{{" at ${open} has no "}}"`);
    if (open > at) parts.push(src.slice(at, open));
    parts.push(compileExpr(src.slice(open + 2, close), exprOptions(o, paths, 'title')));
    at = close + 2;
  }
  return parts;
}

function exprOptions(o: LabelSpec, paths: Set<string>, part: string) {
  return { names: o.fields, prev: o.prev, timeZone: o.timeZone, where: `${o.where}.${part}`, paths };
}

/** Compiles a rule's title, severity and dedup; a syntax error or unknown function fails here, naming the key. */
export function compileLabels(o: LabelSpec): CompiledLabels {
  const paths = new Set<string>();
  const title = compileTitle(o.title, o, paths);
  const fixed = severityName(o.severity);
  const severity = fixed === null ? compileExpr(o.severity, exprOptions(o, paths, 'severity')) : null;
  const dedup = o.dedup === undefined ? null : compileExpr(o.dedup, exprOptions(o, paths, 'dedup'));
  const constantTitle = title.length === 1 && typeof title[0] === 'string' ? title[0] : null;
  return {
    paths: [...paths].map((p) => [p, compilePath(p)] as const),
    constant: constantTitle !== null && severity === null && dedup === null,
    of: (ctx) => ({
      title:
        constantTitle ??
        clip(
          title.map((p) => (typeof p === 'string' ? p : clip(visibleText(text(p(ctx))), MAX_VALUE_CHARS))).join(''),
          MAX_TITLE_CHARS,
        ),
      severity: fixed ?? toSeverity(severity!(ctx)),
      dedup: dedup ? text(dedup(ctx)) : null,
    }),
  };
}

function toSeverity(v: Value): Severity {
  if (v === null) return 'medium';
  const t = String(v).trim().toLowerCase();
  return severityName(t) ?? SEVERITY_ALIASES[t] ?? 'medium';
}
