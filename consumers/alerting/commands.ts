/**
 * Alerting's command-line verbs: `hooklog rules` (what a set of rule files
 * loads as, in whichever format each is written) and `hooklog hunt` (a
 * catalogue hunt or detection run over ClickHouse as parameterised SQL).
 */
import type { PlatformConfig } from '../../platform/config/schema.js';
import type { AlertingConfig } from './config.js';
import { HooklogError } from '../../platform/errors.js';
import { withConfiguredStore, type Store } from '../../platform/store/index.js';
import type { ResultSet } from '../../platform/store/result-set.js';
import { huntQuery } from './filter/hunt.js';
import { parseFilter, type FilterNode } from '../../platform/filter/parse.js';
import { existsSync } from 'node:fs';
import { backtest } from './backtest.js';
import { lintPaths, type LintOptions, type RiskMapping } from './lint.js';
import type { QueryResolver } from './scheduled.js';
import { loadAllRules } from './rules/load.js';
import { loadAnyRuleFile, loadRulePaths } from './rules/sources.js';
import type { CompiledRule } from './rules/types.js';

/** What the commands read of the whole config (composed in cli/). */
type Config = PlatformConfig & { readonly alerting?: AlertingConfig | undefined };

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `30d`, `12h`, `15m` (that long before `now`) or an ISO-8601 instant → epoch ms. */
export function parseInstant(text: string, what: string, now = Date.now()): number {
  const rel = /^(\d{1,6})([smhd])$/.exec(text.trim());
  if (rel) return now - Number(rel[1]) * UNIT_MS[rel[2] as keyof typeof UNIT_MS];
  let s = text.trim().replace(' ', 'T');
  if (/T\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(s)) s += 'Z';
  const t = Date.parse(s);
  if (!/^\d{4}-\d\d-\d\d/.test(s) || !Number.isFinite(t)) {
    throw new HooklogError(
      'QUERY_INVALID',
      `--${what}: expected an ISO-8601 time (2026-01-01T00:00:00Z) or a duration back from now (30d, 12h), got ${JSON.stringify(text.slice(0, 60))}`,
    );
  }
  return t;
}

/** ClickHouse DateTime64(3) text for a bound parameter. */
export function chTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

/** `hooklog rules <paths…>`: one row per file: its format, what it yields and how it runs. */
export function describeRuleFiles(paths: readonly string[]): ResultSet {
  const rows = loadRulePaths(paths).map((l) => {
    const c = l.catalogue;
    const runs = c
      ? c.rule === null
        ? 'content pack (prose only)'
        : c.kind === 'hunt'
          ? 'hooklog hunt'
          : 'stream (match)'
      : l.rules.map((r) => `stream (${r.kind})`).join(', ');
    return {
      file: l.file,
      format: l.format,
      rules: l.rules.map((r) => r.id).join(', ') || (c?.id ?? ''),
      runs,
      risk: l.rules
        .filter((r) => r.risk)
        .map((r) => `${r.id}: ${r.risk!.level} for ${r.risk!.ttlMs / 3_600_000} h`)
        .join(', '),
      notes: l.notes.join('; '),
    };
  });
  return { columns: ['file', 'format', 'rules', 'runs', 'risk', 'notes'], rows, whole: ['file'] };
}

export interface HuntOptions {
  readonly org: string;
  readonly since: string;
  readonly until?: string;
  readonly limit?: number;
}

/** The filter a hunt file carries: a catalogue hunt or detection with `okta_systemlog`. */
export function huntFilter(file: string): FilterNode {
  const loaded = loadAnyRuleFile(file);
  const tree = loaded.catalogue?.tree;
  if (!tree) {
    // A hooklog rule file whose single rule is written as a filter string also works.
    const only = loaded.format === 'hooklog' && loaded.rules.length === 1 ? loaded.rules[0] : undefined;
    if (only?.filter) return parseFilter(only.filter);
    throw new HooklogError('QUERY_INVALID', `${file}: no System Log filter expression to hunt with`);
  }
  return tree;
}

/** `hooklog hunt <file> --org … --since …` over `store`: the matching events, oldest first. */
export async function huntIn(store: Store, file: string, o: HuntOptions): Promise<ResultSet> {
  const tree = huntFilter(file);
  const now = Date.now();
  const since = parseInstant(o.since, 'since', now);
  const until = o.until ? parseInstant(o.until, 'until', now) : now;
  if (since >= until) throw new HooklogError('QUERY_INVALID', '--until must be after --since');
  const { sql, params } = huntQuery(tree);
  const rs = await store.client.query({
    query: sql.replaceAll('{db}', store.database),
    query_params: { ...params, org: o.org, since: chTime(since), until: chTime(until), limit: o.limit ?? 1000 },
    format: 'JSON',
  });
  const body = await rs.json<Record<string, unknown>>();
  return { columns: body.meta?.map((m) => m.name) ?? [], rows: body.data };
}

/** `hooklog hunt` with a store of its own (no running hooklog holds it). */
export function runHunt(config: Config, file: string, o: HuntOptions): Promise<ResultSet> {
  huntFilter(file); // a file that is no hunt fails before any store is touched
  return withConfiguredStore(config, (store) => huntIn(store, file, o));
}

/** `hooklog rules lint`: one row per problem, with file and line, never shortened (a lint report is read whole). */
export function lintRuleFiles(
  paths: readonly string[],
  risk?: RiskMapping,
  o: LintOptions = {},
): { result: ResultSet; errors: number } {
  const problems = lintPaths(paths, risk, o);
  return {
    result: {
      columns: ['where', 'severity', 'problem'],
      rows: problems.map((p) => ({ where: `${p.file}:${p.line}`, severity: p.severity, problem: p.message })),
      whole: ['where', 'severity', 'problem'],
    },
    errors: problems.filter((p) => p.severity === 'error').length,
  };
}

/**
 * Progress on stderr: a redrawn bar on a terminal, a line per 10% otherwise
 * (logs and CI). Returns the callback and a `done` that ends the bar's line.
 */
export function progress(
  out: NodeJS.WriteStream = process.stderr,
  label = 'events',
): { onProgress: (done: number, total: number) => void; done: () => void } {
  let lastDecile = -1;
  let drawn = false;
  return {
    onProgress: (done, total) => {
      const frac = total > 0 ? Math.min(1, done / total) : 1;
      if (out.isTTY) {
        const width = 30;
        const fill = Math.round(frac * width);
        out.write(
          `\r[${'#'.repeat(fill)}${'-'.repeat(width - fill)}] ${(frac * 100).toFixed(0).padStart(3)}% ${done.toLocaleString('en')}/${total.toLocaleString('en')} ${label}`,
        );
        drawn = true;
        return;
      }
      const decile = Math.floor(frac * 10);
      if (decile > lastDecile) {
        lastDecile = decile;
        out.write(`progress: ${decile * 10}% (${done}/${total} ${label})\n`);
      }
    },
    done: () => {
      if (drawn) out.write('\n');
    },
  };
}

export interface RulesTestOptions {
  readonly since: string;
  readonly until?: string;
  readonly org?: string;
  readonly sample?: number;
}

/** The rules `target` names: a file or directory of rules, else a rule id among the configured ones. */
export function rulesFor(config: Config, target: string): CompiledRule[] {
  if (existsSync(target)) return loadRulePaths([target], ruleOptions(config)).flatMap((l) => l.rules);
  const a = config.alerting;
  const all = a
    ? loadAllRules(
        { rules: a.rules, ruleFiles: a.rule_files, sigmaPaths: a.sigma_paths, rulePaths: a.rule_paths },
        ruleOptions(config),
      )
    : [];
  const found = all.filter((r) => r.id === target);
  if (found.length === 0)
    throw new HooklogError('QUERY_INVALID', `${target}: neither a rule file nor the id of a configured rule`);
  return found;
}

function ruleOptions(config: Config) {
  return {
    placeholders: config.alerting?.sigma_placeholders ?? {},
    defaultSuppressMs: config.alerting?.suppression_ms ?? 0,
  };
}

/** Named analytics queries for scheduled rules with `query:` (given by cli/, which composes the components). */
export type DatabaseQueryResolver = (
  name: string,
  database: string,
  params: Readonly<Record<string, string>>,
) => ReturnType<QueryResolver>;

/** What `hooklog rules test` prints: per-rule counts, the first alerts, a summary line. */
export interface RulesTestReport {
  readonly summary: ResultSet;
  readonly first: ResultSet;
  readonly footer: string;
}

/** `hooklog rules test`: what the rules would have raised over the stored events; sends nothing. */
export async function runRulesTest(
  config: Config,
  target: string,
  o: RulesTestOptions,
  onProgress?: (done: number, total: number) => void,
  resolveQuery?: DatabaseQueryResolver,
): Promise<RulesTestReport> {
  rulesFor(config, target); // a target that names no rule fails before any store is touched
  return withConfiguredStore(config, (store) => rulesTestIn(store, config, target, o, onProgress, resolveQuery));
}

/**
 * `hooklog rules test` over `store`: the command's own store, or the running
 * hooklog's when it is asked through its admin socket (embedded ClickHouse
 * admits one process).
 */
export async function rulesTestIn(
  store: Store,
  config: Config,
  target: string,
  o: RulesTestOptions,
  onProgress?: (done: number, total: number) => void,
  resolveQuery?: DatabaseQueryResolver,
): Promise<RulesTestReport> {
  const rules = rulesFor(config, target);
  const now = Date.now();
  const since = parseInstant(o.since, 'since', now);
  const until = o.until ? parseInstant(o.until, 'until', now) : now;
  if (since >= until) throw new HooklogError('QUERY_INVALID', '--until must be after --since');
  const r = await backtest(store, rules, {
    since,
    until,
    allowedLatenessMs: config.alerting?.allowed_lateness_ms ?? 300_000,
    sample: o.sample ?? 3,
    ...(o.org !== undefined ? { org: o.org } : {}),
    ...(onProgress ? { onProgress } : {}),
    ...(resolveQuery
      ? {
          resolveQuery: (name: string, params: Readonly<Record<string, string>>) =>
            resolveQuery(name, store.database, params),
        }
      : {}),
  });
  const summary: ResultSet = {
    columns: ['rule', 'kind', 'alerts'],
    rows: r.perRule.map((x) => ({ rule: x.rule.id, kind: x.rule.kind, alerts: x.alerts })),
  };
  const first: ResultSet = {
    columns: ['rule', 'event_time', 'org', 'key', 'count', 'event_ids'],
    rows: r.perRule.flatMap((x) =>
      x.first.map((a) => ({
        rule: a.rule_id,
        event_time: a.event_time,
        org: a.org,
        key: a.key,
        count: a.count,
        event_ids: a.event_ids.slice(0, 3).join(' '),
      })),
    ),
  };
  const total = r.perRule.reduce((n, x) => n + x.alerts, 0);
  const footer = `${rules.length} rules over ${r.events} events (${new Date(since).toISOString()} .. ${new Date(until).toISOString()}${o.org ? `, org ${o.org}` : ''}): ${total} alerts, ${r.late} late events, ${(r.ms / 1000).toFixed(1)} s; nothing was sent`;
  return { summary, first, footer };
}
