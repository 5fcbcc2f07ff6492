/**
 * Values taken from the environment are text; the schema says what each key
 * holds. A value that was one `${NAME}` placeholder and nothing else
 * (`port: ${PORT}`) is converted to the number or boolean the schema expects
 * at that key, and only there: the same text in a string field stays a string
 * (a secret of digits stays text), and a value written in the file itself is
 * never converted (`port: "8080"` is still refused, as the user wrote a string).
 * Per-process overrides (`--port`, `HOOKLOG_PORT`, …) are such values too.
 */
import type { z } from 'zod';

/** Paths (JSON of the key path) of values that came whole from the environment or a per-process override. */
export type EnvPaths = Set<string>;

export const pathKey = (path: readonly PropertyKey[]): string => JSON.stringify(path.map(String));

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const BOOLEAN: Readonly<Record<string, boolean>> = { true: true, false: false };

/** The text as the schema's type, or undefined when it does not read as one. */
function convert(text: string, expected: string): number | boolean | undefined {
  const t = text.trim();
  if (expected === 'number' || expected === 'int') return NUMBER.test(t) ? Number(t) : undefined;
  if (expected === 'boolean') return BOOLEAN[t.toLowerCase()];
  return undefined;
}

function getAt(tree: unknown, path: readonly PropertyKey[]): unknown {
  let v = tree;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[String(k)];
  }
  return v;
}

function setAt(tree: unknown, path: readonly PropertyKey[], value: unknown): void {
  let v = tree as Record<string, unknown>;
  for (const k of path.slice(0, -1)) v = v[String(k)] as Record<string, unknown>;
  v[String(path[path.length - 1])] = value;
}

export interface Coercion {
  /** True when at least one value was converted (parse again). */
  readonly changed: boolean;
  /** Environment values that do not read as the type their key needs, keyed like `pathKey`. */
  readonly unreadable: ReadonlyMap<string, string>;
}

/**
 * Converts, in place, each environment value the schema refused for being text
 * where it wanted a number or a boolean. `tree` is the interpolated config (a
 * fresh object tree, not the user's).
 */
export function coerceEnvValues(tree: unknown, issues: readonly z.core.$ZodIssue[], fromEnv: EnvPaths): Coercion {
  let changed = false;
  const unreadable = new Map<string, string>();
  for (const issue of issues) {
    if (issue.code !== 'invalid_type') continue;
    const key = pathKey(issue.path);
    const value = getAt(tree, issue.path);
    if (!fromEnv.has(key) || typeof value !== 'string') continue;
    const converted = convert(value, issue.expected);
    if (converted === undefined) {
      unreadable.set(key, `expected ${issue.expected}, the environment gave ${JSON.stringify(value.slice(0, 40))}`);
      continue;
    }
    setAt(tree, issue.path, converted);
    changed = true;
  }
  return { changed, unreadable };
}
