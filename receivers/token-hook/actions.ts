/**
 * Compiles one configured action into what an answer needs: which tokens it
 * patches and a builder for its patch operation. The protocol's rules are
 * checked here, once, at load — reserved claims per token type, lifetime
 * bounds, where `-` may appear — and paths are escaped here, so the answer
 * path only picks prebuilt strings. Literal operations are built once and
 * shared by every answer.
 */
import type { ActionConfig, SetActionConfig } from './rule-schema.js';
import { claimPointer, type PathStep } from './pointer.js';
import {
  LIFETIME_MAX_S,
  LIFETIME_MIN_S,
  LIFETIME_PATH,
  MAX_ANSWER_BYTES,
  RESERVED_CLAIMS,
  isReservedClaim,
  isValidLifetime,
  type TokenType,
} from './protocol.js';
import type { TokenContext } from './request.js';
import { compileTemplate } from './template.js';

/** One JSON Patch operation of a command's value. */
export interface PatchOp {
  readonly op: 'add' | 'replace' | 'remove';
  readonly path: string;
  readonly value?: unknown;
}

/** The part of a per-request operation fixed at load: which op, at which (checked, escaped) path. */
export interface OpShape {
  readonly op: 'add' | 'replace';
  readonly path: string;
}

/**
 * An operation built per request (template, lookup): only its value is the
 * request's. All of one action's operations share its frozen `shape`, so the
 * answer works out the protocol verdict and JSON text of op and path once per
 * action (answer.ts), as it does for literal operations. Serialises as the
 * plain `{ op, path, value }` (the shape is private).
 */
export class BuiltOp implements PatchOp {
  readonly op: 'add' | 'replace';
  readonly path: string;
  readonly value: unknown;
  readonly #shape: OpShape;

  constructor(shape: OpShape, value: unknown) {
    this.op = shape.op;
    this.path = shape.path;
    this.value = value;
    this.#shape = shape;
  }

  get shape(): OpShape {
    return this.#shape;
  }
}

export type CompiledAction =
  | {
      readonly kind: 'patch';
      readonly tokens: readonly TokenType[];
      /** The operation for this request, or undefined when its value is absent (template variable, lookup miss). */
      readonly build: (ctx: TokenContext) => PatchOp | undefined;
    }
  | { readonly kind: 'deny'; readonly summary: string };

/** A lookup table as actions read it: the current rows, swapped wholesale on reload. */
export interface LookupSource {
  get(key: string): unknown;
}

/** Finds a table by name, noting which column the action reads (so reloads can require it). */
export type TableResolver = (name: string, column: string | undefined) => LookupSource | undefined;

const BOTH: readonly TokenType[] = Object.freeze(['id', 'access'] as const);
const ID: readonly TokenType[] = Object.freeze(['id'] as const);
const ACCESS: readonly TokenType[] = Object.freeze(['access'] as const);

function tokensOf(sel: 'id' | 'access' | 'both'): readonly TokenType[] {
  return sel === 'both' ? BOTH : sel === 'id' ? ID : ACCESS;
}

function reservedWhere(claim: string, tokens: readonly TokenType[]): string | undefined {
  const hit = tokens.filter((t) => isReservedClaim(t, claim));
  if (hit.length === 0) return undefined;
  if ((RESERVED_CLAIMS.both as readonly string[]).includes(claim)) return 'ID and access tokens';
  return hit[0] === 'id' ? 'ID tokens' : 'access tokens';
}

function checkTarget(
  op: PatchOp['op'],
  claim: string,
  path: readonly PathStep[],
  tokens: readonly TokenType[],
): string {
  const where = reservedWhere(claim, tokens);
  if (where)
    throw new Error(`claim "${claim}" is reserved in ${where}: the service would silently drop the whole patch`);
  path.forEach((step, i) => {
    if (step === '-' && (op !== 'add' || i !== path.length - 1))
      throw new Error('"-" (append) may only be the last path step of an add');
  });
  return claimPointer(claim, path);
}

function checkLiteral(value: unknown, what: string): void {
  if (value === null) throw new Error(`${what} is null (use remove to take a claim away)`);
  const text = JSON.stringify(value) as string | undefined;
  if (text === undefined) throw new Error(`${what} is not a JSON value`);
  if (Buffer.byteLength(text) >= MAX_ANSWER_BYTES)
    throw new Error(`${what} is larger than a whole answer may be (256 KB)`);
}

function columnOf(row: unknown, column: string): unknown {
  return row !== null && typeof row === 'object' && Object.hasOwn(row, column)
    ? (row as Record<string, unknown>)[column]
    : undefined;
}

function compileSet(op: 'add' | 'replace', set: SetActionConfig, tables: TableResolver): CompiledAction {
  const tokens = tokensOf(set.tokens);
  const path = checkTarget(op, set.claim, set.path, tokens);
  const sources = [set.value !== undefined, set.template !== undefined, set.lookup !== undefined].filter(
    Boolean,
  ).length;
  if (sources !== 1) throw new Error('give exactly one of value, template or lookup');
  if (set.value !== undefined) {
    checkLiteral(set.value, 'value');
    const prebuilt: PatchOp = Object.freeze({ op, path, value: set.value });
    return { kind: 'patch', tokens, build: () => prebuilt };
  }
  const shape: OpShape = Object.freeze({ op, path });
  if (set.template !== undefined) {
    const template = compileTemplate(set.template);
    return {
      kind: 'patch',
      tokens,
      build: (ctx) => {
        const value = template(ctx);
        return value === undefined ? undefined : new BuiltOp(shape, value);
      },
    };
  }
  const ref = set.lookup!;
  const table = tables(ref.table, ref.column);
  if (!table) throw new Error(`lookup table "${ref.table}" is not declared in this hook's lookups`);
  const key = compileTemplate(ref.key);
  const column = ref.column;
  const fallback = ref.default;
  if (fallback !== undefined) checkLiteral(fallback, 'lookup.default');
  return {
    kind: 'patch',
    tokens,
    build: (ctx) => {
      const k = key(ctx);
      const row = k === undefined ? undefined : table.get(k);
      const found = column === undefined ? row : columnOf(row, column);
      const value = found === undefined || found === null ? fallback : found;
      return value === undefined ? undefined : new BuiltOp(shape, value);
    },
  };
}

const KINDS = ['add', 'replace', 'remove', 'lifetime', 'deny'] as const;

/** The kind of a configured action (exactly one key is set), or a message saying what is wrong. */
export function actionKind(action: ActionConfig): (typeof KINDS)[number] {
  const given = KINDS.filter((k) => action[k] !== undefined);
  if (given.length !== 1)
    throw new Error(
      `an action has exactly one of ${KINDS.join(', ')} (got ${given.length === 0 ? 'none' : given.join(', ')})`,
    );
  return given[0]!;
}

/** Compiles one action; throws with a message saying what is wrong with it. */
export function compileAction(action: ActionConfig, tables: TableResolver): CompiledAction {
  const kind = actionKind(action);
  try {
    switch (kind) {
      case 'add':
        return compileSet('add', action.add!, tables);
      case 'replace':
        return compileSet('replace', action.replace!, tables);
      case 'remove': {
        const r = action.remove!;
        const tokens = tokensOf(r.tokens);
        const prebuilt: PatchOp = Object.freeze({ op: 'remove', path: checkTarget('remove', r.claim, r.path, tokens) });
        return { kind: 'patch', tokens, build: () => prebuilt };
      }
      case 'lifetime': {
        const l = action.lifetime!;
        if (!isValidLifetime(l.seconds))
          throw new Error(`${l.seconds} s is outside ${LIFETIME_MIN_S}..${LIFETIME_MAX_S} s`);
        const prebuilt: PatchOp = Object.freeze({ op: 'replace', path: LIFETIME_PATH, value: l.seconds });
        return { kind: 'patch', tokens: tokensOf(l.tokens), build: () => prebuilt };
      }
      case 'deny':
        return { kind: 'deny', summary: action.deny!.error_summary };
    }
  } catch (err) {
    throw new Error(`${kind}: ${(err as Error).message}`, { cause: err });
  }
}
