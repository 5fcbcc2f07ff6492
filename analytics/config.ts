import { z } from 'zod';
import { apiKeySchema } from '../platform/access.js';

/**
 * The `api` section: who may call the query API (/api/queries). Without keys
 * the API is not served at all, so it is never open by accident.
 */
export const apiSchema = z
  .strictObject({
    keys: z
      .array(apiKeySchema)
      .max(16)
      .default([])
      .describe(
        'Accepted API keys, sent as "Authorization: Bearer <key>" (use ${ENV_VAR}). A bare string sees every org and reads only; ' +
          '{ name, secret, orgs, role } sees only its orgs (anything else answers 404) and, as analyst, may change alert states in the console API. ' +
          'Several allow rotation. Empty: the query API is off.',
      ),
  })
  .prefault({})
  .describe(
    'The query API (GET /api/queries, GET /api/queries/<name>): read-only analytics over the events, for analysts and their tools.',
  );

export type ApiConfig = z.output<typeof apiSchema>;
