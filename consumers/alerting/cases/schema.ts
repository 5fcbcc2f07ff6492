/**
 * A rule's test cases: labelled examples that `hooklog rules test --cases`
 * runs through the engine offline. A hooklog rule carries them under `cases:`;
 * a Sigma or catalogue file, loaded as published, gets them from a sidecar
 * `<name>.cases.yaml` beside it (a list of cases, each naming its `rule:` when
 * the file yields more than one).
 *
 * A case is one event or ordered events (arrival order, each with its event
 * time), and the expected outcome: an alert or none, and optionally the group
 * key, severity, count and number of alerts. The schema is the documentation:
 * every field says what it means and its default.
 */
import { z } from 'zod';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `500ms`, `30s`, `5m`, `1h`, `2d` or a number of milliseconds → ms; null when not a duration. */
export function durationMs(v: unknown): number | null {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? v : null;
  if (typeof v !== 'string') return null;
  const m = /^(\d{1,12})\s*(ms|s|m|h|d)$/.exec(v.trim());
  return m ? Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS] : null;
}

/** An ISO-8601 instant with a date and a time (a zone, else UTC) → epoch ms; null otherwise. */
export function instantMs(v: unknown): number | null {
  if (typeof v !== 'string' || !/^\d{4}-\d\d-\d\d[T ]\d\d:\d\d/.test(v.trim())) return null;
  let s = v.trim().replace(' ', 'T');
  if (!/(Z|[+-]\d\d:?\d\d)$/.test(s)) s += 'Z';
  const t = Date.parse(s);
  return Number.isFinite(t) ? t : null;
}

const duration = z
  .union([z.number(), z.string()])
  .refine((v) => durationMs(v) !== null, 'expected a duration: 500ms, 30s, 5m, 1h, 2d, or milliseconds');

/** A point in event time: an ISO-8601 instant, or a duration after the case's `start`. */
const when = z
  .union([z.number(), z.string()])
  .refine(
    (v) => durationMs(v) !== null || instantMs(v) !== null,
    'expected an ISO-8601 instant (2026-01-01T10:00:00Z) or a duration after the case start (90s, 5m, 1h)',
  );

const eventSchema = z
  .record(z.string(), z.unknown())
  .describe('A LogEvent as the stream carries it (JSON object). `uuid` is filled in when missing.');

export const caseEventSchema = z
  .strictObject({
    event: eventSchema,
    at: when
      .optional()
      .describe(
        "Event time: an instant, or a duration after the case's `start`; written into `published`. Default: the event's own `published`, else 1 s after the previous event (the first: at `start`).",
      ),
    org: z.string().min(1).optional().describe("The event's org. Default: the case's `org`."),
    repeat: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(1)
      .describe('Send this event this many times (each copy its own uuid), `every` apart.'),
    every: duration.default('1s').describe('Time between the copies of a repeated event.'),
  })
  .describe('One event of an ordered case, with its time.');

/** A mock's time: an instant, a duration after the case's `start`, or `-1h` (a duration before it). */
export function mockTimeMs(v: unknown, startMs: number): number | null {
  if (typeof v === 'string' && v.trim().startsWith('-')) {
    const d = durationMs(v.trim().slice(1));
    return d === null ? null : startMs - d;
  }
  const i = instantMs(v);
  if (i !== null) return i;
  const d = durationMs(v);
  return d === null ? null : startMs + d;
}

const mockWhen = z
  .union([z.number(), z.string()])
  .refine(
    (v) => mockTimeMs(v, 0) !== null,
    'expected an instant, a duration after the case start (5m), or one before it (-1d)',
  );
const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const mockKey = z
  .array(scalar)
  .max(32)
  .optional()
  .describe("The group: the rule's group_by values in order. Default: the group of the case's first event.");
const mockOrg = z.string().min(1).optional().describe("The group's org. Default: the case's `org`.");

/**
 * The state a rule reads, set before the case's first event: what earlier
 * events (or earlier runs) would have left behind. Each kind applies to the
 * rule kinds that read it (cases/mocks.ts); one a rule does not read is an
 * error, not ignored.
 */
export const mocksSchema = z
  .strictObject({
    seen: z
      .array(
        z.strictObject({
          key: mockKey,
          org: mockOrg,
          values: z.array(scalar).min(1).max(100_000).describe('Values of distinct_field already seen for the group.'),
          at: mockWhen.optional().describe("When they were last seen. Default: the case's `start`."),
        }),
      )
      .max(10_000)
      .optional()
      .describe('first_seen rules: the values each group has seen (a group with none is still learning).'),
    previous: z
      .array(
        z.strictObject({
          key: mockKey,
          org: mockOrg,
          fields: z
            .record(z.string(), scalar)
            .describe("The previous event's named values (the rule's `fields`; `prev.x` in `when`)."),
          at: mockWhen.optional().describe("The previous event's time (`prev.time`). Default: the case's `start`."),
        }),
      )
      .max(10_000)
      .optional()
      .describe("stateful rules: each group's previous event."),
    alerted: z
      .array(z.strictObject({ key: z.array(scalar).max(32).describe("The rule's `key` columns."), org: mockOrg }))
      .max(10_000)
      .optional()
      .describe('scheduled rules: result rows already alerted by an earlier run (not alerted again).'),
    identity: z
      .record(
        z.string().min(1).max(512).describe('The user id, as events name it in `actor.id`.'),
        z.strictObject({
          org: mockOrg,
          groups: z
            .array(
              z.union([
                z.string().max(512),
                z.strictObject({ id: z.string().min(1).max(512), name: z.string().max(512) }),
              ]),
            )
            .max(1000)
            .optional()
            .describe('The groups (`actor.groups`): names, or `{ id, name }` to give `actor.groupIds` too.'),
          admin_roles: z
            .array(z.string().min(1).max(512))
            .max(100)
            .optional()
            .describe('Administrator role types (`actor.adminRoles`), e.g. SUPER_ADMIN. Default: none.'),
          status: z.string().min(1).max(512).optional().describe('The status (`actor.status`). Default: ACTIVE.'),
        }),
      )
      .refine((m) => Object.keys(m).length <= 10_000, 'at most 10000 users')
      .optional()
      .describe(
        'Stream rules: the identity records of users (`actor.groups`, `actor.adminRoles`, `actor.status`), as the identity sync would have written them; any other actor has none.',
      ),
    enrichment: z
      .record(
        z.string().max(64).describe('An IP address, as the events give it in client.ipAddress.'),
        z.strictObject({
          geo: z
            .strictObject({
              country: z.string().min(1).max(8).optional(),
              city: z.string().min(1).max(128).optional(),
              lat: z.number().min(-90).max(90).optional(),
              lon: z.number().min(-180).max(180).optional(),
            })
            .optional()
            .describe("The City database's answer: `enrichment.geo.*`."),
          asn: z
            .strictObject({
              number: z.number().int().min(0).max(0xffffffff).optional(),
              organization: z.string().min(1).max(256).optional(),
            })
            .optional()
            .describe("The ASN database's answer: `enrichment.asn.*`."),
        }),
      )
      .optional()
      .describe(
        "GeoIP answers by IP address, standing for the configured databases (enrichment.geoip): the case's events get them as live events do (geo only for events that do not locate themselves, the AS only for those that name none).",
      ),
    lookups: z
      .unknown()
      .optional()
      .describe('Reserved for lookup-table rows once rules can read lookup tables; an error until then.'),
  })
  .describe("The state the rule reads before the case's first event (first-seen sets, previous values, alerted rows).");

/** The anchor's (Panther's) form: the names of the rule's state lookups and what each returns. */
export const pantherMocksSchema = z
  .array(
    z
      .object({
        objectName: z.string().min(1).max(200),
        returnValue: z.unknown(),
      })
      .describe('One state lookup of a Panther rule and its value (often JSON in a string).'),
  )
  .max(100)
  .describe(
    "Panther's `Mocks:` list, converted by rule kind (cases/mocks.ts): a list is the seen set, an object the previous values, an empty value a write stub.",
  );

const severity = z.enum(['informational', 'low', 'medium', 'high', 'critical']);

export const caseSchema = z
  .strictObject({
    name: z.string().min(1).max(200).describe('What the case shows; printed when it fails.'),
    rule: z
      .string()
      .min(1)
      .optional()
      .describe(
        "The rule's id. Inside a hooklog rule: that rule (may be omitted). In a sidecar: required when the file yields more than one rule.",
      ),
    alert: z.boolean().describe('Whether the rule must raise an alert (true) or none (false).'),
    alerts: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('With alert: true, exactly this many alerts (default: at least one); a grouped alert is one.'),
    key: z
      .array(z.union([z.string(), z.number(), z.boolean(), z.null()]))
      .optional()
      .describe(
        "With alert: true, every alert's group key: the group_by values in order (a scheduled rule: its key columns); `''` for a missing one.",
      ),
    severity: severity
      .optional()
      .describe("With alert: true, every alert's severity (a rule's `severity:` expression, as the event made it)."),
    title: z
      .string()
      .optional()
      .describe("With alert: true, every alert's title (a rule's `{{ }}` title, as the event made it)."),
    count: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe(
        'With alert: true, the number of events behind every alert (distinct values for distinct rules); a grouped alert (dedup, dedup_period): of all its findings.',
      ),
    event: eventSchema.optional().describe('The case as one event (at `start` unless it has `published`).'),
    events: z
      .array(caseEventSchema)
      .min(1)
      .max(10_000)
      .optional()
      .describe('The case as ordered events: sent in this order, each with its event time.'),
    org: z.string().min(1).default('acme').describe('The org the events come from.'),
    at: when
      .optional()
      .describe(
        "Event time of the case's events that carry no time of their own (no `at`, no valid `published`): the first at this instant or duration after `start`, each next 1 s after the one before. Without it such an event is an error.",
      ),
    mocks: z
      .union([mocksSchema, pantherMocksSchema])
      .optional()
      .describe(
        "The state the rule reads before the first event: { seen, previous, alerted }, or Panther's list of { objectName, returnValue }.",
      ),
    start: z
      .string()
      .default('2026-01-01T00:00:00Z')
      .refine((v) => instantMs(v) !== null, 'expected an ISO-8601 instant')
      .describe('The instant durations in `at` and `until` count from.'),
    until: when
      .optional()
      .describe(
        'Event time is moved on to this instant after the last event (absences, held stateful events are decided). Default: the last event + allowed lateness. Scheduled rules run once at the first run time (a multiple of every_ms) at or after it; default: after the last event.',
      ),
    lateness_ms: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe("allowed_lateness_ms for this case. Default: the config's alerting.allowed_lateness_ms (5 min)."),
    placeholders: z
      .record(z.string(), z.array(z.string()))
      .optional()
      .describe("Sigma |expand placeholders for this case, over the config's alerting.sigma_placeholders."),
    lists: z
      .record(z.string(), z.array(z.string().max(100)).max(10_000))
      .optional()
      .describe(
        'IP lists for this case by name, each a list of addresses and CIDR ranges, over (replacing by name) the config\'s enrichment.ip_lists: `lists: { anonymizers: ["198.51.100.0/24"] }`.',
      ),
  })
  .refine((c) => (c.event === undefined) !== (c.events === undefined), {
    message: 'give exactly one of `event` and `events`',
  })
  .refine(
    (c) =>
      c.alert ||
      (c.alerts === undefined &&
        c.key === undefined &&
        c.count === undefined &&
        c.severity === undefined &&
        c.title === undefined),
    { message: '`alerts`, `key`, `severity`, `title` and `count` describe the alerts expected: only with alert: true' },
  )
  .describe('One labelled example of a rule: the events and the verdict expected.');

export type CaseSpec = z.infer<typeof caseSchema>;

/** The zod issues of an invalid case as one line. */
export function caseIssues(err: z.ZodError): string {
  return err.issues.map((i) => `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`).join('; ');
}
