/**
 * What the console's routes share: the pieces cli/ hands in (store, stream,
 * the query library, the search engine and the operations reports, which live in other
 * components and reach the console only through these functions) and the
 * console's own (sign-in, sessions, keys).
 */
import type { Principal } from '../platform/access.js';
import type { Logger } from '../platform/log.js';
import type { Store } from '../platform/store/index.js';
import type { Stream } from '../platform/stream/types.js';
import type { ConsoleAuth } from './auth.js';
import type { ConsoleConfig } from './config.js';

/** A named query and its parameters, as the query library describes it. */
export interface QueryDescription {
  readonly name: string;
  readonly area: string;
  readonly description: string;
  readonly params: ReadonlyArray<{
    readonly name: string;
    readonly type: string;
    readonly required: boolean;
    readonly default?: string | number;
    readonly description: string;
  }>;
}

/**
 * The query library, run exactly as `hooklog query` runs it. `run` throws a
 * QUERY_INVALID HooklogError (with `param` naming a wrong parameter).
 */
export interface QueryLibrary {
  list(): readonly QueryDescription[];
  run(
    name: string,
    params: Readonly<Record<string, string>>,
  ): Promise<{ columns: string[]; rows: Array<Record<string, unknown>> }>;
}

/** `hooklog status` and `hooklog coverage`, as the CLI computes them. */
export interface Operations {
  status(): Promise<ReadonlyArray<{ readonly org: string } & Readonly<Record<string, unknown>>>>;
  coverage(org: string, since: string, until: string): Promise<unknown>;
}

/** A search as the search engine (analytics/search/) takes it: the console passes the URL's parameters on. */
export interface SearchQuery {
  readonly filter: string;
  readonly org: string;
  readonly since: number;
  readonly until: number;
  readonly fields?: readonly string[];
  readonly facets?: readonly string[];
  readonly limit?: number;
  readonly after?: string;
  readonly histogram?: boolean;
}

export interface SearchResult {
  readonly columns: readonly string[];
  readonly rows: ReadonlyArray<Record<string, unknown>>;
  readonly next?: string;
  readonly histogram?: { readonly bucketSeconds: number; readonly buckets: ReadonlyArray<{ t: string; n: number }> };
  readonly facets?: ReadonlyArray<{
    readonly field: string;
    readonly values: ReadonlyArray<{ value: string; n: number }>;
  }>;
}

/**
 * The search engine, deciding for `principal` (platform/access.ts). It throws a QUERY_INVALID HooklogError
 * naming a wrong parameter (`param`), with `notFound: true` for an org the principal may not read.
 */
export type SearchEngine = (principal: Principal, q: SearchQuery) => Promise<SearchResult>;

/** What is known about a rule by id (title, kind, description, its file), when the process has the rules. */
export type RuleInfo = (ruleId: string) => Readonly<Record<string, unknown>> | undefined;

/** One case of a rule file, as `hooklog rules test --cases` judged it: why it failed, or null when it passed. */
export interface RuleCaseResult {
  readonly name: string;
  readonly failure: string | null;
}

/**
 * Runs a rule file's test cases (its YAML text) through the alerting engine offline, as
 * `hooklog rules test --cases` does; a file that does not load is one result without a name.
 */
export type RuleCaseRunner = (yaml: string) => Promise<readonly RuleCaseResult[]>;

export interface ConsoleContext {
  readonly config: ConsoleConfig;
  readonly store: Store;
  readonly stream: Stream;
  /** `<prefix>.alert-states`. */
  readonly topic: string;
  /** `<prefix>.saved-searches`. */
  readonly savedSearchesTopic: string;
  /** Orgs this deployment knows (config): what an unscoped principal picks from. */
  readonly knownOrgs: readonly string[];
  readonly queries: QueryLibrary;
  readonly operations: Operations;
  readonly search: SearchEngine;
  readonly rules: RuleInfo;
  readonly ruleCases: RuleCaseRunner;
  readonly auth: ConsoleAuth;
  readonly log: Logger;
  readonly now: () => number;
}
