/**
 * The options of the simulated org's command line (main.ts), apart from it so
 * test/docs.test.ts can hold the commands the guides show to them without
 * starting an org.
 */
import type { ParseArgsConfig } from 'node:util';

export const SIM_OPTIONS = {
  port: { type: 'string', default: '8089' },
  events: { type: 'string', default: '10000' },
  days: { type: 'string', default: '30' },
  'live-per-s': { type: 'string', default: '5' },
  'hook-ca': { type: 'string' },
  issuer: { type: 'string' },
  oidc: { type: 'boolean' },
  user: { type: 'string', multiple: true },
  users: { type: 'string' },
  'console-url': { type: 'string' },
  'client-id': { type: 'string' },
  'client-secret': { type: 'string' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;
