import { z } from 'zod';
import { secret } from '../platform/config/secrets.js';

/**
 * The `api` section: who may call the query API (/api/queries). Without keys
 * the API is not served at all, so it is never open by accident.
 */
export const apiSchema = z
  .strictObject({
    keys: secret(
      z
        .array(z.string().min(24, 'API keys must be at least 24 characters'))
        .max(16)
        .describe(
          'Accepted API keys, sent as "Authorization: Bearer <key>" (use ${ENV_VAR}). Several allow rotation. Empty: the query API is off.',
        ),
    ).default([]),
  })
  .prefault({})
  .describe(
    'The query API (GET /api/queries, GET /api/queries/<name>): read-only analytics over the events, for analysts and their tools.',
  );

export type ApiConfig = z.output<typeof apiSchema>;
