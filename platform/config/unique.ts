import type { z } from 'zod';

/**
 * A `superRefine` for a list of config entries named by `id` (hooks, receivers, orgs): each id once. The issue is
 * on the second entry's id and names the first, so the message says both places (`also token_hooks.0.id`). `at`:
 * where the list sits, when the refinement runs on an object above it (the config's own cross-field checks).
 */
export function uniqueIds<T extends { readonly id: string }>(
  what: string,
  key: string,
  at: readonly PropertyKey[] = [],
): (list: readonly T[], ctx: z.RefinementCtx) => void {
  return (list, ctx) => {
    const seen = new Map<string, number>();
    list.forEach((entry, i) => {
      const prev = seen.get(entry.id);
      if (prev !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: [...at, i, 'id'],
          message: `duplicate ${what} id "${entry.id}" (also ${key}.${prev}.id)`,
        });
      seen.set(entry.id, i);
    });
  };
}
