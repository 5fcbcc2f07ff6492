/**
 * Alerting's command-line verbs: `hooklog rules` (what a set of rule files
 * loads as, in whichever format each is written) and `hooklog hunt` (a
 * catalogue hunt or detection run over ClickHouse as parameterised SQL).
 */
import type { Config } from '../../platform/config/schema.js';
import { HooklogError } from '../../platform/errors.js';
import { withConfiguredStore } from '../../platform/store/index.js';
import type { ResultSet } from '../../cli/format.js';
import { huntQuery } from './filter/sql.js';
import { parseFilter, type FilterNode } from './filter/parse.js';
import { loadAnyRuleFile, loadRulePaths } from './rules/sources.js';

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `30d`, `12h`, `15m` (that long before `now`) or an ISO-8601 instant → epoch ms. */
export function parseInstant(text: string, what: string, now = Date.now()): number {
  const rel = /^(\d{1,6})([smhd])$/.exec(text.trim());
  if (rel) return now - Number(rel[1]) * UNIT_MS[rel[2] as keyof typeof UNIT_MS];
  let s = text.trim().replace(' ', 'T');
  if (/T\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(s)) s += 'Z';
  const t = Date.parse(s);
  if (!/^\d{4}-\d\d-\d\d/.test(s) || !Number.isFinite(t)) {
    throw new HooklogError('QUERY_INVALID', `--${what}: expected an ISO-8601 time (2026-01-01T00:00:00Z) or a duration back from now (30d, 12h), got ${JSON.stringify(text.slice(0, 60))}`);
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
      ? c.rule === null ? 'content pack (prose only)' : c.kind === 'hunt' ? 'hooklog hunt' : 'stream (match)'
      : l.rules.map((r) => `stream (${r.kind})`).join(', ');
    return { file: l.file, format: l.format, rules: l.rules.map((r) => r.id).join(', ') || (c?.id ?? ''), runs, notes: l.notes.join('; ') };
  });
  return { columns: ['file', 'format', 'rules', 'runs', 'notes'], rows };
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

/** `hooklog hunt <file> --org … --since …`: the matching events, oldest first. */
export async function runHunt(config: Config, file: string, o: HuntOptions): Promise<ResultSet> {
  const tree = huntFilter(file);
  const now = Date.now();
  const since = parseInstant(o.since, 'since', now);
  const until = o.until ? parseInstant(o.until, 'until', now) : now;
  if (since >= until) throw new HooklogError('QUERY_INVALID', '--until must be after --since');
  const { sql, params } = huntQuery(tree);
  return withConfiguredStore(config, async (store) => {
    const rs = await store.client.query({
      query: sql.replaceAll('{db}', store.database),
      query_params: { ...params, org: o.org, since: chTime(since), until: chTime(until), limit: o.limit ?? 1000 },
      format: 'JSON',
    });
    const body = await rs.json<Record<string, unknown>>();
    return { columns: body.meta?.map((m) => m.name) ?? [], rows: body.data };
  });
}
