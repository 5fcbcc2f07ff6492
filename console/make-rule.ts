/**
 * `GET /console/api/search/rule`: the Search page's "Make a rule" (rule-file.ts writes the file). Org-scoped as
 * every route (platform/access.ts): another org, or a marked event that is not the org's, is 404. The marked
 * events are read as stored, the file is written, and its cases are run through the alerting engine exactly as
 * `hooklog rules test --cases` runs them (cli/ hands that in: `ConsoleContext.ruleCases`) before anything is
 * sent: when the marks contradict the rule (an event marked should-alert that the filter does not take, or a
 * should-not-alert one that it does), the answer is 400 naming the event and why, never a file that fails.
 * It only downloads: nothing is deployed or written anywhere.
 */
import type Router from '@koa/router';
import { maySeeOrg } from '../platform/access.js';
import type { Store } from '../platform/store/index.js';
import { EVENTS_TABLE } from '../schemas/tables.js';
import type { ConsoleContext, RuleCaseResult } from './context.js';
import { badRequest, notFound } from './http.js';
import { ParamError } from './range.js';
import { apiRoute } from './route.js';
import {
  caseBytes,
  caseName,
  parseRuleRequest,
  ruleFileText,
  ruleOf,
  RULE_LIMITS,
  type RuleRequest,
  type StoredEvent,
} from './rule-file.js';

/** The org's events of these uuids, as stored (FINAL: one row per event, every copy's values folded). */
async function storedEvents(store: Store, org: string, uuids: readonly string[]): Promise<Map<string, StoredEvent>> {
  const rows = await store.query<{ uuid: string; raw: string; ms: string }>(
    `SELECT uuid, raw, toString(toUnixTimestamp64Milli(published)) AS ms
       FROM ${store.database}.${EVENTS_TABLE} FINAL
      WHERE org = {org:String} AND uuid IN {uuids:Array(String)}
      LIMIT 1 BY uuid`,
    { org, uuids: [...uuids] },
  );
  return new Map(rows.map((r) => [r.uuid, { uuid: r.uuid, raw: r.raw, publishedMs: Number(r.ms) }]));
}

/** Why the marks and the rule disagree (the first marked event whose case fails), or undefined when they agree. */
export function refusalOf(
  r: RuleRequest,
  results: readonly RuleCaseResult[],
): { error: string; param: string; event?: string } | undefined {
  const names = r.marks.map((m, i) => caseName(i, m));
  // The file itself first (it does not load: no case of it ran): that is the rule's fault, not a mark's.
  const file = results.find((x) => x.failure !== null && !names.includes(x.name));
  if (file) return { param: 'filter', error: `the rule does not hold: ${file.failure}` };
  for (const [i, m] of r.marks.entries()) {
    const got = results.find((x) => x.name === names[i]);
    if (got?.failure === null) continue;
    const why = got ? `: ${got.failure}` : '';
    return m.mark === 'alert'
      ? {
          param: 'alert',
          event: m.uuid,
          error: `event ${m.uuid} is marked "should alert", but the rule does not alert on it: the filter does not match it${why}`,
        }
      : {
          param: 'quiet',
          event: m.uuid,
          error: `event ${m.uuid} is marked "should not alert", but the rule alerts on it: the filter matches it${why}`,
        };
  }
  return undefined;
}

export function mountMakeRule(router: Router, c: ConsoleContext): void {
  router.get(
    '/console/api/search/rule',
    apiRoute(c, async (ctx, who, q) => {
      const r = parseRuleRequest(q);
      if (!maySeeOrg(who.principal, r.org)) {
        c.auth.refused(ctx, who, 'other_org', r.org);
        return notFound(ctx);
      }
      const events = await storedEvents(
        c.store,
        r.org,
        r.marks.map((m) => m.uuid),
      );
      // Another org's event is not told apart from one that does not exist.
      if (events.size < r.marks.length) return notFound(ctx);
      if (caseBytes(r, events) > RULE_LIMITS.caseBytes)
        throw new ParamError('threshold', 'the marked events times the threshold are too large to test: lower it');
      const text = ruleFileText(ruleOf(r, events));
      const refusal = refusalOf(r, await c.ruleCases(text));
      if (refusal) {
        badRequest(ctx, refusal.error, refusal.param);
        if (refusal.event !== undefined) ctx.body = { ...(ctx.body as object), event: refusal.event };
        return;
      }
      ctx.type = 'application/yaml; charset=utf-8';
      // The id is [A-Za-z0-9._:-] only (rule-file.ts): safe in the header as it is.
      ctx.set('content-disposition', `attachment; filename="${r.id}.yaml"`);
      ctx.body = text;
    }),
  );
}
