/**
 * Config of hook registration: where the identity service reaches hooklog
 * (`hook_registration.public_url`), how hooklog recognises the hooks it
 * created, how often a running hooklog compares them with the config, and
 * each hook's own `register:` section (beside its receiver config). No
 * imports from the receivers' configs: they import these.
 */
import { z } from 'zod';

const slug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of letters, digits, . _ - (not starting with . _ -)');
const eventType = z.string().regex(/^[A-Za-z0-9_.-]{1,200}$/, 'must be an event type such as user.session.start');

const managedBy = slug
  .optional()
  .describe(
    "The orgs[] entry whose base_url and credentials manage this hook (auth.ssws, or auth.oauth with the okta.eventHooks / okta.inlineHooks scopes). Default: the hook's org.",
  );

export const eventHookRegistrationSchema = z
  .strictObject({
    org: managedBy,
    event_types: z
      .array(eventType)
      .min(1)
      .max(300)
      .describe('Event types the hook subscribes to (the service allows 300 per hook), e.g. [user.session.start].'),
  })
  .describe(
    'Register this hook with the identity service: `hooklog hooks apply` creates, updates, verifies and activates it; a running hooklog watches it.',
  );

export const tokenHookRegistrationSchema = z
  .strictObject({ org: managedBy })
  .describe(
    'Register this token inline hook with the identity service (`hooklog hooks apply`); needs auth.type header. Attach it to an access policy rule in the admin console.',
  );

export const hookRegistrationSchema = z
  .strictObject({
    public_url: z
      .url()
      // The service calls hooks only over https and refuses any other URI at registration: said here, at load, not
      // by the first `hooks apply` after check-config and plan passed.
      .refine(
        (u) => URL.canParse(u) && new URL(u).protocol === 'https:',
        'must be an https:// URL: the identity service calls hooks only over https (TLS may end at a proxy in front of hooklog)',
      )
      .refine((u) => !/[?#]/.test(u), 'must have no query or fragment')
      .optional()
      .describe(
        'The address the identity service calls hooklog at, e.g. https://hooklog.example.com (TLS ends there or in hooklog). Hooks are registered ' +
          'as <public_url>/hooks/events/<id> and <public_url>/hooks/token/<id>. Must be https: the service refuses any other URI. Needed by every hook with `register`.',
      ),
    name_prefix: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9 ._:-]{0,63}$/, 'must be 1-64 of letters, digits, space . _ : -')
      .default('hooklog:')
      .describe(
        'Hooks hooklog creates are named <name_prefix><hook id>; it changes or deletes only hooks named so, never any other. ' +
          'Give each deployment that manages the same org its own prefix.',
      ),
    watch_interval_ms: z
      .number()
      .int()
      .min(0)
      .max(86_400_000)
      .default(60_000)
      .describe(
        "How often a running hooklog (pollers role) reads each org's registered hooks and compares them with the config: metrics per hook, " +
          'and a built-in alert when one is deactivated, unverified or gone. Two GETs per org each time, within management.rate_limit_share: an interval ' +
          'shorter than the share affords (about 2 s for a bucket of 100 a minute at the default share) spends each window early and waits out the rest, ' +
          'and `hooklog hooks apply` waits with it. 0: off.',
      ),
  })
  .prefault({})
  .describe('Registering event and token hooks with the identity service (`hooklog hooks plan|apply|status`).');

export type HookRegistrationConfig = z.output<typeof hookRegistrationSchema>;
