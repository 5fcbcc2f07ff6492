/**
 * JSON Pointer (RFC 6901) for patch paths. Claim names are often URIs
 * (`https://example.com/roles`): unescaped, their `/` would split the name
 * into a nested path and the patch would land somewhere else entirely. Paths
 * are built once at config load; answers only carry the prebuilt strings.
 */
import { CLAIMS_PREFIX, LIFETIME_PATH } from './protocol.js';

/** Escapes one reference token: `~` → `~0`, then `/` → `~1` (the order matters). */
export function escapeSegment(segment: string): string {
  return segment.indexOf('~') === -1 && segment.indexOf('/') === -1
    ? segment
    : segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

const BAD_ESCAPE = /~(?![01])/;

/** The unescaped reference token, or undefined when it holds a `~` not followed by 0 or 1. */
export function unescapeSegment(segment: string): string | undefined {
  if (segment.indexOf('~') === -1) return segment;
  if (BAD_ESCAPE.test(segment)) return undefined;
  return segment.replaceAll('~1', '/').replaceAll('~0', '~');
}

/** One step below a claim: a member name, an array index, or `-` (append, last step of an `add` only). */
export type PathStep = string | number;

/** `/claims/<claim>/<step>…` with every step escaped. */
export function claimPointer(claim: string, steps: readonly PathStep[] = []): string {
  let out = CLAIMS_PREFIX + escapeSegment(claim);
  for (const s of steps) out += '/' + (typeof s === 'number' ? String(s) : escapeSegment(s));
  return out;
}

export type ParsedPath =
  | { readonly kind: 'lifetime' }
  | { readonly kind: 'claim'; readonly claim: string; readonly depth: number; readonly appends: boolean }
  | { readonly kind: 'invalid'; readonly reason: string };

/**
 * Classifies a patch path as the service reads it: the lifetime member, or a
 * claim (top-level name unescaped, how many steps below it, whether it ends
 * in `-`). Anything else is invalid, with the reason.
 */
export function parsePatchPath(path: string): ParsedPath {
  if (path === LIFETIME_PATH) return { kind: 'lifetime' };
  if (!path.startsWith(CLAIMS_PREFIX))
    return { kind: 'invalid', reason: `path ${JSON.stringify(path)} is neither /claims/<name>… nor ${LIFETIME_PATH}` };
  const steps = path.slice(CLAIMS_PREFIX.length).split('/');
  const claim = unescapeSegment(steps[0]!);
  if (claim === undefined || claim === '')
    return { kind: 'invalid', reason: `path ${JSON.stringify(path)} has an empty or badly escaped claim name` };
  for (let i = 1; i < steps.length; i++) {
    const step = steps[i]!;
    if (unescapeSegment(step) === undefined)
      return { kind: 'invalid', reason: `path ${JSON.stringify(path)} has a badly escaped step` };
    if (step === '-' && i !== steps.length - 1)
      return { kind: 'invalid', reason: `path ${JSON.stringify(path)} uses "-" before its last step` };
  }
  return {
    kind: 'claim',
    claim,
    depth: steps.length - 1,
    appends: steps[steps.length - 1] === '-' && steps.length > 1,
  };
}
