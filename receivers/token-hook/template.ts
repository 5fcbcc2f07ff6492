/**
 * Templates over the request context: `"{{user.profile.department}}-{{client.id}}"`.
 * `{{…}}` rather than `${…}` because the config loader already interpolates
 * `${ENV}` in every string. Compiled once at load into accessors; rendering
 * is string concatenation. A variable that is absent (or not a scalar) makes
 * the whole template absent, so a rule never emits half a value.
 */
import type { TokenContext } from './request.js';

export type Accessor = (ctx: TokenContext) => unknown;

const FIXED: Readonly<Record<string, Accessor>> = {
  'client.id': (c) => c.clientId,
  'client.name': (c) => c.clientName,
  'client.type': (c) => c.clientType,
  'request.id': (c) => c.requestId,
  'request.ip': (c) => c.ip,
  grant_type: (c) => c.grantType,
  issuer: (c) => c.issuer,
  scopes: (c) => c.scopes,
  'user.id': (c) => c.userId,
  'user.login': (c) => c.login,
  'session.id': (c) => c.sessionId,
  'session.amr': (c) => c.amr,
  'session.mfa_active': (c) => c.mfaActive,
  'policy.id': (c) => c.policyId,
  'policy.rule_id': (c) => c.policyRuleId,
};

const own = (o: Readonly<Record<string, unknown>> | undefined, k: string): unknown =>
  o !== undefined && Object.hasOwn(o, k) ? o[k] : undefined;

const PREFIXED: ReadonlyArray<readonly [string, (name: string) => Accessor]> = [
  ['user.profile.', (n) => (c) => own(c.profile, n)],
  ['identity.claims.', (n) => (c) => own(c.idClaims, n)],
  ['access.claims.', (n) => (c) => own(c.accessClaims, n)],
];

/** Every variable name a template may use (prefixed ones take any member name after the prefix). */
export const TEMPLATE_VARIABLES: readonly string[] = [...Object.keys(FIXED), ...PREFIXED.map(([p]) => `${p}<name>`)];

/** The accessor for a variable name, or undefined when there is no such variable. */
export function variableAccessor(name: string): Accessor | undefined {
  const fixed = FIXED[name];
  if (fixed) return fixed;
  for (const [prefix, make] of PREFIXED) {
    if (name.startsWith(prefix) && name.length > prefix.length) return make(name.slice(prefix.length));
  }
  return undefined;
}

/** A value as template text: strings as they are, numbers and booleans printed, arrays of those joined by spaces. */
export function scalarText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) {
    let out = '';
    for (let i = 0; i < v.length; i++) {
      const t: unknown = v[i];
      if (typeof t !== 'string' && !(typeof t === 'number' && Number.isFinite(t)) && typeof t !== 'boolean')
        return undefined;
      out += (i === 0 ? '' : ' ') + String(t);
    }
    return out;
  }
  return undefined;
}

/** Renders to a string, or undefined when a variable it uses is absent. */
export type Template = (ctx: TokenContext) => string | undefined;

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** Compiles a template; throws with a message naming the problem (unknown variable, stray braces). */
export function compileTemplate(source: string): Template {
  const parts: Array<string | Accessor> = [];
  let last = 0;
  for (const m of source.matchAll(PLACEHOLDER)) {
    const name = m[1]!;
    const accessor = variableAccessor(name);
    if (!accessor)
      throw new Error(
        `template ${JSON.stringify(source)} uses unknown variable "${name}" (known: ${TEMPLATE_VARIABLES.join(', ')})`,
      );
    if (m.index > last) parts.push(source.slice(last, m.index));
    parts.push(accessor);
    last = m.index + m[0].length;
  }
  if (last < source.length) parts.push(source.slice(last));
  for (const p of parts) {
    if (typeof p === 'string' && (p.includes('{{') || p.includes('}}')))
      throw new Error(`template ${JSON.stringify(source)} has unbalanced {{ }}`);
  }
  if (parts.length === 1 && typeof parts[0] === 'function') {
    const only = parts[0];
    return (ctx) => scalarText(only(ctx));
  }
  return (ctx) => {
    let out = '';
    for (const p of parts) {
      if (typeof p === 'string') out += p;
      else {
        const t = scalarText(p(ctx));
        if (t === undefined) return undefined;
        out += t;
      }
    }
    return out;
  };
}
