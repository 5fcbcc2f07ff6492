/**
 * Compiles a rule's `when:` into one predicate over the request context.
 * Everything that can be prepared is prepared here, once: value sets,
 * lower-cased values, regular expressions, CIDR block lists. Evaluating a
 * predicate allocates nothing.
 */
import { BlockList, isIP } from 'node:net';
import { linearRegex } from '../../platform/regex.js';
import type { ConditionsConfig, StringTestConfig } from './rule-schema.js';
import type { TokenContext } from './request.js';
import { scalarText } from './template.js';
import type { RiskLevel } from '../../schemas/risk.js';

export type Predicate = (ctx: TokenContext) => boolean;
type TextTest = (value: string | undefined) => boolean;

/** Compiles a string test (a list of exact values, or any_of/prefix/suffix/regex); throws naming the problem. */
export function compileStringTest(t: StringTestConfig, what: string): TextTest {
  if (Array.isArray(t)) {
    const set = new Set(t);
    return (v) => v !== undefined && set.has(v);
  }
  if (!t.any_of && t.prefix === undefined && t.suffix === undefined && t.regex === undefined) {
    throw new Error(`${what}: give a list of values, or any_of, prefix, suffix or regex`);
  }
  const fold = t.ignore_case ? (s: string) => s.toLowerCase() : (s: string) => s;
  const set = t.any_of ? new Set(t.any_of.map(fold)) : undefined;
  const prefix = t.prefix === undefined ? undefined : fold(t.prefix);
  const suffix = t.suffix === undefined ? undefined : fold(t.suffix);
  let regex: RegExp | undefined;
  if (t.regex !== undefined) {
    // V8's linear-time engine has no case-insensitive mode, and a backtracking match of an attacker's login
    // inside a sign-in is what linearRegex exists to prevent.
    if (t.ignore_case)
      throw new Error(
        `${what}: ignore_case does not apply to a regex (it could not be matched in bounded time): write both cases ` +
          'in the pattern ([Aa]dmin), or use any_of, prefix or suffix, which ignore_case does apply to',
      );
    try {
      regex = linearRegex(t.regex);
    } catch (err) {
      throw new Error(`${what}: invalid regex: ${(err as Error).message}`, { cause: err });
    }
  }
  return (raw) => {
    if (raw === undefined) return false;
    const v = fold(raw);
    if (set && !set.has(v)) return false;
    if (prefix !== undefined && !v.startsWith(prefix)) return false;
    if (suffix !== undefined && !v.endsWith(suffix)) return false;
    if (regex && !regex.test(raw)) return false;
    return true;
  };
}

/** A block list of the given ranges; throws naming the first one that is not an address or CIDR. */
export function compileCidrs(cidrs: readonly string[], what: string): BlockList {
  const list = new BlockList();
  for (const c of cidrs) {
    const [addr, bits, extra] = c.trim().split('/');
    const family = isIP(addr ?? '');
    const max = family === 4 ? 32 : 128;
    const prefix = bits === undefined ? max : Number(bits);
    if (
      family === 0 ||
      extra !== undefined ||
      !Number.isInteger(prefix) ||
      prefix < 0 ||
      prefix > max ||
      (bits !== undefined && !/^\d+$/.test(bits))
    ) {
      throw new Error(`${what}: ${JSON.stringify(c)} is not an IPv4/IPv6 address or CIDR range`);
    }
    list.addSubnet(addr!, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** A dotted-quad IPv4 address as an unsigned 32-bit number, or -1 when it is not one. */
export function ipv4Number(ip: string): number {
  let n = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < ip.length; i++) {
    const c = ip.charCodeAt(i);
    if (c === 0x2e) {
      if (digits === 0 || ++dots > 3) return -1;
      n = n * 256 + part;
      part = 0;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39) {
      if (digits > 0 && part === 0) return -1; // leading zero: isIP refuses it too
      part = part * 10 + (c - 0x30);
      if (part > 255) return -1;
      digits++;
    } else {
      return -1;
    }
  }
  return dots === 3 && digits > 0 ? n * 256 + part : -1;
}

/**
 * The IPv4 entries of a validated list as [first, last] numbers, and the other entries. A plain IPv4 address
 * is checked against the ranges with a few comparisons, where BlockList.check builds a SocketAddress per call
 * (a measurable share of an answer); the other entries (IPv6, which may hold IPv4-mapped ranges) stay with
 * BlockList, which also still decides every address that is not plain IPv4.
 */
export function ipv4Ranges(cidrs: readonly string[]): {
  readonly v4: Array<readonly [number, number]>;
  readonly others: string[];
} {
  const v4: Array<readonly [number, number]> = [];
  const others: string[] = [];
  for (const c of cidrs) {
    const [addr, bits] = c.trim().split('/');
    const base = ipv4Number(addr ?? '');
    if (base === -1) {
      others.push(c);
      continue;
    }
    const size = 2 ** (32 - (bits === undefined ? 32 : Number(bits)));
    const first = base - (base % size);
    v4.push([first, first + size - 1]);
  }
  return { v4, others };
}

function ipIn(cidrs: readonly string[], what: string): Predicate {
  const all = compileCidrs(cidrs, what); // validates every entry
  const { v4, others } = ipv4Ranges(cidrs);
  const rest = others.length > 0 ? compileCidrs(others, what) : undefined;
  return (ctx) => {
    const ip = ctx.ip;
    if (ip === undefined) return false;
    const n = ipv4Number(ip);
    if (n !== -1) {
      for (const [first, last] of v4) if (n >= first && n <= last) return true;
      return rest !== undefined && rest.check(ip, 'ipv4');
    }
    const family = isIP(ip);
    return family !== 0 && all.check(ip, family === 4 ? 'ipv4' : 'ipv6');
  };
}

function anyOf(wanted: readonly string[], read: (ctx: TokenContext) => readonly string[]): Predicate {
  const set = new Set(wanted);
  return (ctx) => {
    for (const v of read(ctx)) if (set.has(v)) return true;
    return false;
  };
}

type BaseConditions = Omit<ConditionsConfig, 'not'>;

/** What conditions may ask beyond the request: the user's current risk level (risk-view.ts). */
export interface ConditionDeps {
  readonly userRisk: (ctx: TokenContext) => RiskLevel;
}

/** For checking a config: everyone at none. */
const NO_RISK: ConditionDeps = { userRisk: () => 'none' };

function compileBase(when: BaseConditions, where: string, deps: ConditionDeps): Predicate[] {
  const preds: Predicate[] = [];
  const text = (t: StringTestConfig | undefined, name: string, read: (ctx: TokenContext) => string | undefined) => {
    if (!t) return;
    const test = compileStringTest(t, `${where}${name}`);
    preds.push((ctx) => test(read(ctx)));
  };
  text(when.client_id, 'client_id', (c) => c.clientId);
  text(when.issuer, 'issuer', (c) => c.issuer);
  text(when.user_login, 'user_login', (c) => c.login);
  if (when.scopes_any) preds.push(anyOf(when.scopes_any, (c) => c.scopes));
  if (when.scopes_all) {
    const all = [...new Set(when.scopes_all)];
    preds.push((ctx) => {
      for (let i = 0; i < all.length; i++) if (!ctx.scopes.includes(all[i]!)) return false;
      return true;
    });
  }
  if (when.grant_type) {
    const set = new Set(when.grant_type);
    preds.push((ctx) => ctx.grantType !== undefined && set.has(ctx.grantType));
  }
  for (const [field, t] of Object.entries(when.user_profile ?? {})) {
    text(t, `user_profile.${field}`, (c) =>
      Object.hasOwn(c.profile, field) ? scalarText(c.profile[field]) : undefined,
    );
  }
  if (when.amr_any) preds.push(anyOf(when.amr_any, (c) => c.amr));
  if (when.mfa_active !== undefined) {
    const want = when.mfa_active;
    preds.push((ctx) => ctx.mfaActive === want);
  }
  if (when.ip_cidrs) preds.push(ipIn(when.ip_cidrs, `${where}ip_cidrs`));
  if (when.policy_rule_id) {
    const set = new Set(when.policy_rule_id);
    preds.push((ctx) => ctx.policyRuleId !== undefined && set.has(ctx.policyRuleId));
  }
  if (when.risk) {
    const set = new Set<RiskLevel>(when.risk.user);
    const userRisk = deps.userRisk;
    preds.push((ctx) => set.has(userRisk(ctx)));
  }
  return preds;
}

function all(preds: readonly Predicate[]): Predicate {
  if (preds.length === 0) return () => true;
  if (preds.length === 1) return preds[0]!;
  return (ctx) => {
    for (let i = 0; i < preds.length; i++) if (!preds[i]!(ctx)) return false;
    return true;
  };
}

/** One predicate for a rule's `when:`; throws (message naming the condition) on an invalid one. */
export function compileConditions(when: ConditionsConfig, deps: ConditionDeps = NO_RISK): Predicate {
  const { not, ...base } = when;
  const preds = compileBase(base, 'when.', deps);
  if (not) {
    const negated = compileBase(not, 'when.not.', deps);
    if (negated.length === 0) throw new Error('when.not: has no conditions');
    const inner = all(negated);
    preds.push((ctx) => !inner(ctx));
  }
  return all(preds);
}
