/**
 * The `alerting:` config section. Absent (or `enabled: false`) means no
 * alerting consumer runs inside `hooklog start`; `hooklog alert` requires it.
 */
import { z } from 'zod';
import { riskDeclarationSchema } from './risk/declaration.js';
import { secret } from '../../platform/config/secrets.js';

const slug = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of letters, digits, . _ -');

export const webhookSchema = z
  .strictObject({
    name: slug.describe('Name of this output; its consumer group is <alerting.group>.webhook.<name>.'),
    // A Slack (or Teams, or Discord) incoming-webhook URL carries its credential in the path: whoever has it can post.
    url: secret(z.url().describe('Where alerts are POSTed, one request per alert (use ${ENV_VAR}). Printed redacted.')),
    format: z
      .enum(['json', 'slack'])
      .default('json')
      .describe('json: the alert object; slack: a Slack-compatible {text} message (incoming webhook).'),
    headers: secret(
      z
        .record(z.string(), z.string())
        .describe('Extra request headers (e.g. Authorization: use ${ENV_VAR}). Printed redacted.'),
    ).default({}),
    timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(5000)
      .describe('Per-request time-out; a time-out is retried.'),
    max_batch_records: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(20)
      .describe(
        'Alerts posted (in order) before their offsets are committed. After a crash at most this many are posted again; receivers dedupe by the X-Hooklog-Alert-Id header.',
      ),
    queue_max_records: z
      .number()
      .int()
      .min(10)
      .max(100_000)
      .default(1000)
      .describe(
        'Alerts buffered per partition while the receiver is slow or down; beyond it fetching pauses (the alerts wait in the topic, not in memory).',
      ),
  })
  .describe('A webhook receiving alerts.');

export const riskConfigSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        "Fold the findings of rules declaring risk into users' levels (<prefix>.risk, <prefix>.risk-changes), in the processes running the rule engine.",
      ),
    rules: z
      .record(z.string().min(1), riskDeclarationSchema)
      .default({})
      .describe(
        'Risk for rules loaded as published (Sigma, the vendor catalogue), by rule id: { level, ttl, reason, user }. Replaces a rule’s own risk:. An id no loaded rule has fails the boot.',
      ),
    expiry_check_interval_ms: z
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(1000)
      .describe(
        'How often the owner of an alerts partition looks for contributions that expired (wall clock), so a level falls also for an org that sends nothing.',
      ),
    max_batch_records: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(500)
      .describe('Largest batch of alerts folded (and its changes appended) at once.'),
  })
  .prefault({})
  .describe("Users' risk levels from findings: what each rule's finding contributes and for how long.");

export const alertingSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe('Run the alerting consumer inside `hooklog start`.'),
    group: slug
      .default('hooklog-alerting')
      .describe('Consumer group of the rule engine on <prefix>.logs; outputs use <group>.<output>.'),
    rules: z
      .array(z.record(z.string(), z.unknown()))
      .default([])
      .describe('Inline hooklog rules (consumers/alerting/rules/types.ts).'),
    rule_files: z.array(z.string().min(1)).default([]).describe('YAML files, each a list of hooklog rules.'),
    rule_paths: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'Rule files or directories in any format hooklog reads (hooklog rules, Sigma, the vendor catalogue), told apart by content.',
      ),
    sigma_paths: z
      .array(z.string().min(1))
      .default([])
      .describe('Sigma rule files or directories (all *.yml / *.yaml below are loaded).'),
    sigma_placeholders: z
      .record(z.string(), z.array(z.string()))
      .default({})
      .describe('Values for %name% placeholders in Sigma rules using |expand. An unset placeholder matches nothing.'),
    allowed_lateness_ms: z
      .number()
      .int()
      .min(0)
      .default(300_000)
      .describe(
        'How far behind the newest event time an event may arrive and still count in windows; older ones only feed match rules.',
      ),
    dedup_window_ms: z
      .number()
      .int()
      .min(0)
      .default(600_000)
      .describe(
        'An alert id is remembered this long (event time behind the watermark): an event the service sends twice derives the same alert id and is not alerted again. Kept in the checkpoint, so its size grows with alerts per window.',
      ),
    suppression_ms: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe(
        'Default suppression per (rule, org, key): findings within this long (event time) after an alert are counted, not alerted. Rules may set suppress_ms; rules that group (dedup, dedup_period) count such findings into their open alert instead.',
      ),
    max_batch_records: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(5000)
      .describe(
        'Largest batch evaluated (and checkpointed) at once. Each batch appends the whole engine state and commits: larger batches mean fewer of those writes when behind; a replay after a crash re-evaluates at most one batch.',
      ),
    max_batch_wait_ms: z
      .number()
      .int()
      .min(10)
      .max(60_000)
      .default(500)
      .describe(
        'At most one partial batch per partition per this interval: a partial batch is evaluated once this long has passed since the previous batch was cut.',
      ),
    scheduled: z
      .boolean()
      .default(true)
      .describe(
        'Run the scheduled query rules in this process (needs the store). Run them in one process only: set false in the others.',
      ),
    clickhouse: z
      .boolean()
      .default(true)
      .describe('Write alerts into the ClickHouse alerts table (consumer group <group>.clickhouse).'),
    webhooks: z.array(webhookSchema).default([]).describe('Webhooks receiving every alert.'),
    risk: riskConfigSchema,
  })
  .describe(
    'Detections on the live stream: rules evaluated on <prefix>.logs, alerts to <prefix>.alerts, ClickHouse and webhooks.',
  );

export type AlertingConfig = z.infer<typeof alertingSchema>;
export type WebhookConfig = z.infer<typeof webhookSchema>;
