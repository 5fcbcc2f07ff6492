/**
 * Config keys for running several hooklog instances on one cluster: which
 * components a process runs (`roles`) and its name among the instances
 * (`instance_id`). How identities are derived is in docs/operate/fleet.md,
 * "Identities".
 */
import { z } from 'zod';

export const ROLES = ['receivers', 'pollers', 'sink', 'alerting'] as const;
export type Role = (typeof ROLES)[number];

export const rolesSchema = z
  .array(z.enum(ROLES))
  .min(1)
  .default([...ROLES])
  .describe(
    'Components this process runs: receivers (event and token hooks; stateless, scale behind any load balancer), ' +
      'pollers (each org and API polled by exactly one live instance), sink (stream → ClickHouse, by consumer group; ' +
      'also the alerts table), alerting (rule engine, webhooks, risk and the response: SETs and actions, by consumer group). `hooklog start --roles` overrides it.',
  );

export const instanceIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,100}$/, 'must be 1-100 of letters, digits, . _ -')
  .optional()
  .describe(
    "This instance's name on the Kafka cluster (logs, and the transactional id of writes not bound to owned work). " +
      'Default <hostname>-<pid>: unique for instances started side by side from one config. Set a stable one per ' +
      'instance (a pod name, ${HOSTNAME}) when you want a restart to fence its own zombie by name.',
  );

/** `--roles receivers,pollers` → the roles, refusing unknown names. */
export function parseRoles(text: string): Role[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = names.filter((n) => !(ROLES as readonly string[]).includes(n));
  if (names.length === 0 || bad.length > 0) {
    throw new Error(`--roles: expected a comma-separated list of ${ROLES.join(', ')}; got "${text}"`);
  }
  return [...new Set(names)] as Role[];
}
