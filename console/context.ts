/**
 * What the console's routes share: the pieces cli/ hands in (store, stream,
 * the query library and the operations reports, which live in other
 * components and reach the console only through these functions) and the
 * console's own (sign-in, sessions, keys).
 */
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

/** What is known about a rule by id (title, kind, description, its file), when the process has the rules. */
export type RuleInfo = (ruleId: string) => Readonly<Record<string, unknown>> | undefined;

export interface ConsoleContext {
  readonly config: ConsoleConfig;
  readonly store: Store;
  readonly stream: Stream;
  /** `<prefix>.alert-states`. */
  readonly topic: string;
  /** Orgs this deployment knows (config): what an unscoped principal picks from. */
  readonly knownOrgs: readonly string[];
  readonly queries: QueryLibrary;
  readonly operations: Operations;
  readonly rules: RuleInfo;
  readonly auth: ConsoleAuth;
  readonly log: Logger;
  readonly now: () => number;
}
