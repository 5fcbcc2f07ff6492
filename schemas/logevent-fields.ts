/**
 * The fields of a LogEvent, nested, for checking the field paths rules read (`hooklog rules lint`).
 *
 * From the service's OpenAPI LogEvent schema (okta-management-openapi-spec 2026.06.3, shared/corpora/
 * openapi_logevent.yaml; protocols.md §5) and what real events carry beyond it (the corpora's events):
 * `device`, `insertionTimestamp`, `authenticationContext.rootSessionId` and `.authenticatorContext` (the vendor's
 * own field list, customer-detections' logs/log_fields.csv), `client.ipChain`, `target[].details`.
 *
 * Three kinds of object, because a path that is not listed means different things under each:
 * - `closed`: the service documents every field (`outcome` is result and reason): a path naming
 *   another can never match, whatever event comes (`outcome.reslt`);
 * - `open`: the service adds fields over time (the event itself, `securityContext`, `authenticationContext`):
 *   another name matches nothing today and may match later;
 * - `map`: free-form, keyed by data (`debugContext.debugData`, `detailEntry`, `changeDetails.to`): any path.
 * A scalar has no fields: a path that goes on past one can never match.
 *
 * Names are compared as the rule engine compares them (consumers/alerting/fields.ts): lower-cased,
 * without `_`, so the tree is looked up by that normal form and keeps the service's spelling for messages.
 */

export type FieldNode =
  | { readonly kind: 'scalar' }
  | { readonly kind: 'map' }
  | { readonly kind: 'array'; readonly items: FieldNode }
  | { readonly kind: 'closed' | 'open'; readonly fields: Readonly<Record<string, FieldNode>> };

const scalar: FieldNode = { kind: 'scalar' };
const map: FieldNode = { kind: 'map' };
const closed = (fields: Record<string, FieldNode>): FieldNode => ({ kind: 'closed', fields });
const open = (fields: Record<string, FieldNode>): FieldNode => ({ kind: 'open', fields });
const arrayOf = (items: FieldNode): FieldNode => ({ kind: 'array', items });

const geographicalContext = closed({
  city: scalar,
  state: scalar,
  country: scalar,
  postalCode: scalar,
  geolocation: closed({ lat: scalar, lon: scalar }),
});

const ipDetails = open({
  asNumber: scalar,
  asOrg: scalar,
  domain: scalar,
  isp: scalar,
  ipServiceCategories: arrayOf(open({ isAnonymous: scalar, operator: scalar, type: scalar })),
});

const ipAddress = open({ ip: scalar, geographicalContext, ipDetails, source: scalar, version: scalar });

/** The LogEvent: open, as the service adds fields to it over time (protocols.md §5). */
export const LOG_EVENT: FieldNode = open({
  uuid: scalar,
  published: scalar,
  eventType: scalar,
  version: scalar,
  severity: scalar,
  legacyEventType: scalar,
  displayMessage: scalar,
  insertionTimestamp: scalar,
  actor: closed({
    id: scalar,
    type: scalar,
    alternateId: scalar,
    displayName: scalar,
    detailEntry: map,
    // The seed's spelling of detailEntry; the engine reads whichever an event has.
    detail: map,
    // Not the service's: the actor's identity context, which alerting gives each event from the identity
    // records (schemas/identity.ts; ACTOR_CONTEXT_PATHS).
    groups: arrayOf(scalar),
    groupIds: arrayOf(scalar),
    adminRoles: arrayOf(scalar),
    status: scalar,
  }),
  client: open({
    id: scalar,
    userAgent: closed({ rawUserAgent: scalar, os: scalar, browser: scalar }),
    geographicalContext,
    zone: scalar,
    ipAddress: scalar,
    device: scalar,
    ipChain: arrayOf(ipAddress),
  }),
  // The device context of newer events: not in the spec; the fields the vendor's field list names.
  device: open({
    id: scalar,
    name: scalar,
    os_platform: scalar,
    os_version: scalar,
    managed: scalar,
    registered: scalar,
    device_integrator: map,
    disk_encryption_type: scalar,
    screen_lock_type: scalar,
    secure_hardware_present: scalar,
    jailbreak: scalar,
  }),
  outcome: closed({ result: scalar, reason: scalar }),
  target: arrayOf(
    open({
      id: scalar,
      type: scalar,
      alternateId: scalar,
      displayName: scalar,
      detailEntry: map,
      detail: map,
      details: map,
      changeDetails: closed({ from: map, to: map }),
    }),
  ),
  transaction: closed({ id: scalar, type: scalar, detail: map }),
  debugContext: open({ debugData: map }),
  authenticationContext: open({
    authenticationProvider: scalar,
    credentialProvider: scalar,
    credentialType: scalar,
    issuer: closed({ id: scalar, type: scalar }),
    authenticationStep: scalar,
    externalSessionId: scalar,
    rootSessionId: scalar,
    interface: scalar,
    // Okta Verify / FastPass: how the authenticator was bound and what asked for it.
    authenticatorContext: open({
      applicationVersion: scalar,
      binaryIdentifier: scalar,
      binaryPath: scalar,
      bindingMethod: scalar,
      requestOrigin: scalar,
      signerDistinguishedName: scalar,
      signerKeyIdentifier: scalar,
      userConsent: scalar,
      validationStatus: scalar,
    }),
  }),
  securityContext: open({
    asNumber: scalar,
    asOrg: scalar,
    isp: scalar,
    domain: scalar,
    isProxy: scalar,
    ipDetails,
    risk: open({
      detectionName: scalar,
      issuer: scalar,
      level: scalar,
      previousLevel: scalar,
      reasons: arrayOf(scalar),
    }),
    userBehaviors: arrayOf(open({ id: scalar, name: scalar, result: scalar })),
    botProtection: open({ level: scalar }),
  }),
  request: open({ ipChain: arrayOf(ipAddress) }),
  // hooklog's own, not the service's: the GeoIP answer for client.ipAddress looked up when the event was appended
  // (platform/enrichment/), geo only where the event did not locate itself, asn only where it named no AS.
  enrichment: closed({
    geo: closed({ country: scalar, city: scalar, lat: scalar, lon: scalar }),
    asn: closed({ number: scalar, organization: scalar }),
  }),
  // Panther's fields on events exported from Panther (its test events, replayed by the shipped Panther rules'
  // cases): enrichment keyed by provider and indicator, and its indicator lists. The service never sends them.
  p_enrichment: map,
  p_any_ip_addresses: arrayOf(scalar),
  p_any_domain_names: arrayOf(scalar),
  p_any_emails: arrayOf(scalar),
  p_event_time: scalar,
  p_parse_time: scalar,
  p_log_type: scalar,
  p_row_id: scalar,
  p_source_id: scalar,
  p_source_label: scalar,
});

/**
 * The paths alerting adds to an event's actor from the identity records before its rules run
 * (consumers/alerting/identity/): no event the service sends has them, so the store's events do not either
 * (search refuses them).
 */
export const ACTOR_CONTEXT_PATHS = ['actor.groups', 'actor.groupIds', 'actor.adminRoles', 'actor.status'] as const;

/** A field name in the form rules and events are compared in: lower-cased, without `_`. */
function normal(s: string): string {
  return s.toLowerCase().replaceAll('_', '');
}

/** The verdict on one path (segments in normal form, as the engine compiles them). */
export type PathVerdict =
  | { readonly known: true }
  | {
      readonly known: false;
      /** Index of the first segment that is no field there. */
      readonly at: number;
      /** True when no event can have a value there (a closed object's or a scalar's); false under an open object. */
      readonly never: boolean;
      /** The service's spelling of the fields that are there (empty under a scalar). */
      readonly siblings: readonly string[];
      /** The service's spelling of the segments before `at`. */
      readonly prefix: readonly string[];
    };

function child(node: Extract<FieldNode, { fields: unknown }>, seg: string): [string, FieldNode] | undefined {
  for (const [name, n] of Object.entries(node.fields)) if (normal(name) === seg) return [name, n];
  return undefined;
}

/**
 * Looks `segs` (normal form) up in `root`: a numeric segment indexes an array, `*` is any field, a list is
 * traversed (its items' fields are the list's), and anything goes under a free-form map.
 */
export function lookupFieldPath(segs: readonly string[], root: FieldNode = LOG_EVENT): PathVerdict {
  let node = root;
  const prefix: string[] = [];
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i]!;
    while (node.kind === 'array') {
      if (/^\d+$/.test(seg)) break;
      node = node.items;
    }
    if (node.kind === 'array') {
      node = node.items;
      prefix.push(seg);
      continue;
    }
    if (node.kind === 'map') return { known: true };
    if (node.kind === 'scalar') return { known: false, at: i, never: true, siblings: [], prefix };
    if (seg === '*') {
      // Any field: known when the rest is known under one of them.
      const rest = segs.slice(i + 1);
      const under = Object.values(node.fields).map((n) => lookupFieldPath(rest, n));
      if (under.some((v) => v.known)) return { known: true };
      return { known: false, at: i, never: node.kind === 'closed', siblings: Object.keys(node.fields), prefix };
    }
    const found = child(node, seg);
    if (!found)
      return { known: false, at: i, never: node.kind === 'closed', siblings: Object.keys(node.fields), prefix };
    prefix.push(found[0]);
    node = found[1];
  }
  return { known: true };
}

/** Every field path of the tree in the service's spelling (lists' items under the list's name), for suggestions. */
export function allFieldPaths(root: FieldNode = LOG_EVENT, at = ''): string[] {
  let node = root;
  while (node.kind === 'array') node = node.items;
  if (node.kind !== 'closed' && node.kind !== 'open') return [];
  return Object.entries(node.fields).flatMap(([name, n]) => {
    const p = at ? `${at}.${name}` : name;
    return [p, ...allFieldPaths(n, p)];
  });
}
