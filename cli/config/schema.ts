import { z } from 'zod';
import { uniqueIds } from '../../platform/config/unique.js';
import type { SchemaNode } from '../../platform/config/secrets.js';
import { alertingSchema } from '../../consumers/alerting/config.js';
import { apiSchema } from '../../analytics/config.js';
import { orgsSchema } from '../../ingest/config.js';
import {
  dataDirSchema,
  logLevelSchema,
  logSchema,
  serverSchema,
  storeSchema,
  streamSchema,
} from '../../platform/config/schema.js';
import { eventHookReceiverSchema, eventHookSchema } from '../../receivers/event-hooks/config.js';
import { tokenHooksSchema } from '../../receivers/token-hook/config.js';
import { ssfReceiversSchema } from '../../receivers/ssf/receiver-config.js';
import { instanceIdSchema, rolesSchema } from '../../platform/config/fleet.js';
import { sinkSchema } from '../../consumers/clickhouse-sink/config.js';
import { responseSchema } from '../../consumers/response/config.js';
import { consoleSchema } from '../../console/config.js';
import { hookRegistrationSchema } from '../../receivers/registration/config.js';
import { ipListsSchema } from '../../platform/iplists/lists.js';
import { registrationIssues } from '../../receivers/registration/desired.js';

/**
 * hooklog's whole configuration schema, composed where the process is
 * assembled: the ground floor's sections (platform/config/schema.ts) and each
 * component's own (beside its code). `hooklog check-config --schema` prints it.
 */
export const configSchema = z
  .strictObject({
    roles: rolesSchema,
    instance_id: instanceIdSchema,
    data_dir: dataDirSchema,
    log_level: logLevelSchema,
    log: logSchema,
    server: serverSchema,
    stream: streamSchema,
    store: storeSchema,
    sink: sinkSchema,
    event_hooks: z.array(eventHookSchema).default([]).describe('Event hooks this process receives.'),
    event_hook_receiver: eventHookReceiverSchema,
    orgs: orgsSchema,
    token_hooks: tokenHooksSchema,
    ssf_receivers: ssfReceiversSchema,
    hook_registration: hookRegistrationSchema,
    enrichment: ipListsSchema,
    alerting: alertingSchema.optional(),
    response: responseSchema.optional(),
    api: apiSchema,
    console: consoleSchema,
  })
  .superRefine((cfg, ctx) => {
    uniqueIds('hook', 'event_hooks', ['event_hooks'])(cfg.event_hooks, ctx);
    for (const issue of registrationIssues(cfg)) ctx.addIssue({ code: 'custom', ...issue });
    const orgIds = new Set(cfg.orgs.map((o) => o.id));
    cfg.response?.orgs.forEach((o, i) => {
      if (!orgIds.has(o.org))
        ctx.addIssue({
          code: 'custom',
          path: ['response', 'orgs', i, 'org'],
          message: `org "${o.org}" is not in orgs (its base_url and auth come from there; system_log.enabled: false if it is not polled)`,
        });
    });
    const k = cfg.stream.kafka;
    if (k && k.heartbeat_interval_ms * 3 > k.session_timeout_ms) {
      ctx.addIssue({
        code: 'custom',
        path: ['stream', 'kafka', 'heartbeat_interval_ms'],
        message: `must be at most a third of session_timeout_ms (${k.session_timeout_ms})`,
      });
    }
    if (cfg.server.request_timeout_ms <= cfg.server.headers_timeout_ms) {
      ctx.addIssue({
        code: 'custom',
        path: ['server', 'request_timeout_ms'],
        message: `must be above server.headers_timeout_ms (${cfg.server.headers_timeout_ms})`,
      });
    }
  });

export type Config = z.output<typeof configSchema>;

/**
 * The config's JSON Schema as the build made it, as JSON text (cli/build.ts puts it in the bundle with esbuild's
 * `define`); undeclared when the sources run.
 */
declare const HOOKLOG_CONFIG_JSON_SCHEMA: string | undefined;

let jsonSchema: SchemaNode | undefined;

/**
 * The config schema as JSON Schema (what `check-config --schema` prints), made
 * once: it says which fields are secrets (`"secret": true`, platform/config/secrets.ts). The built CLI has it made
 * at build time: every start reads its config through it, and making it took 50-140 ms of CPU, a tenth of a start
 * (issue 38's restart → first 204). test/e2e/built-cli.test.ts checks the built CLI's is this one.
 */
export function configJsonSchema(): SchemaNode {
  return (jsonSchema ??=
    typeof HOOKLOG_CONFIG_JSON_SCHEMA === 'undefined'
      ? (z.toJSONSchema(configSchema, { io: 'input' }) as SchemaNode)
      : (JSON.parse(HOOKLOG_CONFIG_JSON_SCHEMA) as SchemaNode));
}
