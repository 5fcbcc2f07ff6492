/**
 * The stream rules of content/okta-catalogue.yaml (written from the vendor
 * catalogue's prose-only detections): each fires on events built for it and
 * not on a near miss. (Its scheduled rules are tested in scheduled.test.ts.)
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PartitionEngine } from '../engine.js';
import { loadRulePaths } from '../rules/sources.js';
import type { CompiledRule } from '../rules/types.js';

const PACK = fileURLToPath(new URL('./okta-catalogue.yaml', import.meta.url));
const T0 = Date.parse('2026-03-02T10:00:00Z');
let seq = 0;

function fires(rule: CompiledRule, events: Record<string, unknown>[]): number {
  const engine = new PartitionEngine([rule], { allowedLatenessMs: 0 });
  return events.reduce(
    (n, e, i) => n + engine.process(e, { org: 'acme', timeMs: T0 + i * 1000, id: `e${seq++}` }).length,
    0,
  );
}

const policyUpdate = (from: string, to: string, result = 'SUCCESS') => ({
  eventType: 'policy.rule.update',
  outcome: { result },
  target: [
    { id: 'pol1', type: 'PolicyEntity', displayName: 'Password manager' },
    {
      id: 'rul1',
      type: 'PolicyRule',
      displayName: 'Catch-all',
      changeDetails: {
        from: { policyRuleActionJson: JSON.stringify({ appSignOn: { verificationMethod: { factorMode: from } } }) },
        to: { policyRuleActionJson: JSON.stringify({ appSignOn: { verificationMethod: { factorMode: to } } }) },
      },
    },
  ],
});
const enrol = (name: string) => ({
  eventType: 'device.enrollment.create',
  target: [{ type: 'Device', displayName: name }],
});
const deviceAdd = (user: string, device: string) => ({
  eventType: 'device.user.add',
  actor: { id: user },
  target: [{ type: 'Device', detailEntry: { oktaDeviceId: device } }],
});
const sso = (user: string, app: string) => ({
  eventType: 'user.authentication.sso',
  outcome: { result: 'SUCCESS' },
  actor: { id: user },
  debugContext: { debugData: { initiationType: 'IDP_INITIATED' } },
  target: [
    { type: 'AppInstance', alternateId: app },
    { type: 'AppUser', alternateId: user },
  ],
});
const abandon = (user: string, ip: string, proxy = false) => ({
  eventType: 'user.authentication.auth_via_mfa',
  outcome: { result: 'ABANDONED' },
  actor: { id: user },
  client: { ipAddress: ip },
  securityContext: { isProxy: proxy },
});

describe('content/okta-catalogue.yaml stream rules', () => {
  const rules = new Map(
    loadRulePaths([PACK])
      .flatMap((f) => f.rules)
      .map((r) => [r.id, r]),
  );
  const r = (id: string) => rules.get(`okta-catalogue.${id}`)!;

  it("authentication_policy_mfa_downgrade: 2FA → 1FA in the second target's JSON", () => {
    expect(fires(r('authentication_policy_mfa_downgrade'), [policyUpdate('2FA', '1FA')])).toBe(1);
    expect(fires(r('authentication_policy_mfa_downgrade'), [policyUpdate('1FA', '2FA')])).toBe(0);
    expect(fires(r('authentication_policy_mfa_downgrade'), [policyUpdate('2FA', '1FA', 'FAILURE')])).toBe(0);
  });

  it('device_enrolled_with_nonstandard_hostname: with the pattern configured, only names that do not follow it', () => {
    const withPattern = loadRulePaths([PACK], { placeholders: { device_hostname_pattern: ['^CORP-[A-Z0-9]+$'] } })
      .flatMap((f) => f.rules)
      .find((x) => x.id === 'okta-catalogue.device_enrolled_with_nonstandard_hostname')!;
    expect(fires(withPattern, [enrol('DESKTOP-H4CK3R')])).toBe(1);
    expect(fires(withPattern, [enrol('CORP-LT0042')])).toBe(0);
    // Without a pattern nothing is standard: every enrolment is reported.
    expect(fires(r('device_enrolled_with_nonstandard_hostname'), [enrol('CORP-LT0042')])).toBe(1);
  });

  it('device_registered_to_multiple_users: a second user on one device', () => {
    expect(fires(r('device_registered_to_multiple_users'), [deviceAdd('u1', 'dev1'), deviceAdd('u2', 'dev1')])).toBe(1);
    expect(
      fires(r('device_registered_to_multiple_users'), [
        deviceAdd('u1', 'dev1'),
        deviceAdd('u1', 'dev1'),
        deviceAdd('u2', 'dev2'),
      ]),
    ).toBe(0);
  });

  it('rapid_application_access: ten apps in a minute; nine do not', () => {
    const ten = Array.from({ length: 10 }, (_, i) => sso('u1', `app${i}`));
    expect(fires(r('rapid_application_access'), ten)).toBe(1);
    expect(fires(r('rapid_application_access'), ten.slice(1))).toBe(0);
  });

  it('suspicious_mfa_abandonment: six for one user from one IP, six users from one IP, any through a proxy', () => {
    const six = Array.from({ length: 6 }, () => abandon('u1', '192.0.2.1'));
    expect(fires(r('suspicious_mfa_abandonment.one_user'), six)).toBe(1);
    expect(fires(r('suspicious_mfa_abandonment.one_user'), six.slice(1))).toBe(0);
    const users = Array.from({ length: 6 }, (_, i) => abandon(`u${i}`, '192.0.2.1'));
    expect(fires(r('suspicious_mfa_abandonment.many_users'), users)).toBe(1);
    expect(fires(r('suspicious_mfa_abandonment.many_users'), users.slice(1))).toBe(0);
    expect(fires(r('suspicious_mfa_abandonment.proxy'), [abandon('u1', '192.0.2.1', true)])).toBe(1);
    expect(fires(r('suspicious_mfa_abandonment.proxy'), [abandon('u1', '192.0.2.1', false)])).toBe(0);
  });
});
