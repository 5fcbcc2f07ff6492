/**
 * Parses a token inline hook request (protocols.md §2) into the flat context
 * the rules read. Only the members rules can read are checked, and each is
 * read once: a member of the wrong type is a 400 naming it, an absent or null
 * one is simply absent. Claims and other payload are never walked, so their
 * size or nesting cannot cost time beyond JSON.parse itself — and nesting is
 * bounded before parsing (`jsonText` in ../body.ts, with MAX_JSON_DEPTH).
 */
import { TOKEN_HOOK_EVENT_TYPE } from './protocol.js';

type Obj = Readonly<Record<string, unknown>>;

/** What rules, templates and the audit trail see of one request. */
export interface TokenContext {
  readonly eventId: string | undefined;
  readonly requestId: string | undefined;
  readonly clientId: string | undefined;
  readonly clientName: string | undefined;
  readonly clientType: string | undefined;
  /** Requested scopes (`protocol.request.scope`), else the scopes granted in `data.access.scopes`. */
  readonly scopes: readonly string[];
  /** `protocol.request.grant_type`; `refresh_token` when absent but `OriginalGrant` is present. */
  readonly grantType: string | undefined;
  readonly issuer: string | undefined;
  readonly ip: string | undefined;
  readonly userId: string | undefined;
  readonly login: string | undefined;
  readonly profile: Obj;
  readonly sessionId: string | undefined;
  readonly amr: readonly string[];
  readonly mfaActive: boolean | undefined;
  readonly policyId: string | undefined;
  readonly policyRuleId: string | undefined;
  /** Claims of the ID token being minted; undefined when no ID token is (no `data.identity`). */
  readonly idClaims: Obj | undefined;
  /** Claims of the access token being minted; undefined when none is (no `data.access`). */
  readonly accessClaims: Obj | undefined;
}

export type RequestParse =
  { readonly ok: true; readonly ctx: TokenContext } | { readonly ok: false; readonly reason: string };

/** Deeper than any real request (claims nest a few levels); far below what would strain a parser. */
export const MAX_JSON_DEPTH = 64;

class BadInput extends Error {}

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** `parent[key]` as an object, undefined when absent or null; BadInput naming `path` otherwise. */
function object(parent: Obj | undefined, key: string, path: string): Obj | undefined {
  const v = parent?.[key];
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw new BadInput(`${path} must be an object`);
  return v;
}

function string(parent: Obj | undefined, key: string, path: string): string | undefined {
  const v = parent?.[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new BadInput(`${path} must be a string`);
  return v;
}

function strings(parent: Obj | undefined, key: string, path: string): readonly string[] {
  const v = parent?.[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string'))
    throw new BadInput(`${path} must be an array of strings`);
  return v as string[];
}

function boolean(parent: Obj | undefined, key: string, path: string): boolean | undefined {
  const v = parent?.[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new BadInput(`${path} must be a boolean`);
  return v;
}

const NO_CLAIMS: Obj = Object.freeze({});

/** The token's claims when the token is being minted (its member is present), else undefined. */
function tokenClaims(data: Obj, key: 'identity' | 'access'): Obj | undefined {
  const token = object(data, key, `data.${key}`);
  if (!token) return undefined;
  object(token, 'token', `data.${key}.token`);
  return object(token, 'claims', `data.${key}.claims`) ?? NO_CLAIMS;
}

function splitScopes(scope: string | undefined, granted: Obj | undefined): readonly string[] {
  if (scope !== undefined) return scope.split(' ').filter((s) => s !== '');
  return granted ? Object.keys(granted) : [];
}

/** Parses the request JSON (already depth-checked) into a context, or says why it is not a token hook request. */
export function parseTokenRequest(body: unknown): RequestParse {
  try {
    if (!isObj(body)) throw new BadInput('body must be a JSON object');
    if (body.eventType !== TOKEN_HOOK_EVENT_TYPE) throw new BadInput(`eventType must be ${TOKEN_HOOK_EVENT_TYPE}`);
    const data = object(body, 'data', 'data');
    if (!data) throw new BadInput('data is missing');
    const context = object(data, 'context', 'data.context');
    if (!context) throw new BadInput('data.context is missing');
    const request = object(context, 'request', 'data.context.request');
    const protocol = object(context, 'protocol', 'data.context.protocol');
    const protoRequest = object(protocol, 'request', 'data.context.protocol.request');
    const client = object(protocol, 'client', 'data.context.protocol.client');
    const originalGrant = object(protocol, 'OriginalGrant', 'data.context.protocol.OriginalGrant');
    const session = object(context, 'session', 'data.context.session');
    const user = object(context, 'user', 'data.context.user');
    const policy = object(context, 'policy', 'data.context.policy');
    const access = object(data, 'access', 'data.access');
    const granted = object(access, 'scopes', 'data.access.scopes');
    const grantType = string(protoRequest, 'grant_type', 'data.context.protocol.request.grant_type');
    const ctx: TokenContext = {
      eventId: string(body, 'eventId', 'eventId'),
      requestId: string(request, 'id', 'data.context.request.id'),
      clientId:
        string(client, 'id', 'data.context.protocol.client.id') ??
        string(protoRequest, 'client_id', 'data.context.protocol.request.client_id'),
      clientName: string(client, 'name', 'data.context.protocol.client.name'),
      clientType: string(client, 'type', 'data.context.protocol.client.type'),
      scopes: splitScopes(string(protoRequest, 'scope', 'data.context.protocol.request.scope'), granted),
      grantType: grantType ?? (originalGrant ? 'refresh_token' : undefined),
      issuer: string(
        object(protocol, 'issuer', 'data.context.protocol.issuer'),
        'uri',
        'data.context.protocol.issuer.uri',
      ),
      ip: string(request, 'ipAddress', 'data.context.request.ipAddress'),
      userId: string(user, 'id', 'data.context.user.id') ?? string(session, 'userId', 'data.context.session.userId'),
      login:
        string(object(user, 'profile', 'data.context.user.profile'), 'login', 'data.context.user.profile.login') ??
        string(session, 'login', 'data.context.session.login'),
      profile: object(user, 'profile', 'data.context.user.profile') ?? NO_CLAIMS,
      sessionId: string(session, 'id', 'data.context.session.id'),
      amr: strings(session, 'amr', 'data.context.session.amr'),
      mfaActive: boolean(session, 'mfaActive', 'data.context.session.mfaActive'),
      policyId: string(policy, 'id', 'data.context.policy.id'),
      policyRuleId: string(object(policy, 'rule', 'data.context.policy.rule'), 'id', 'data.context.policy.rule.id'),
      idClaims: tokenClaims(data, 'identity'),
      accessClaims: tokenClaims(data, 'access'),
    };
    return { ok: true, ctx };
  } catch (err) {
    if (err instanceof BadInput) return { ok: false, reason: err.message };
    throw err;
  }
}
