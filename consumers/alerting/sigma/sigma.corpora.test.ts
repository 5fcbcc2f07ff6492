/**
 * Every Sigma Okta rule in the shared corpus loads, fires on an event built
 * to match it and stays silent on a near miss (one field changed).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORPORA_DIR } from '../../../test/support/corpus.js';
import { loadSigmaPaths } from './load.js';
import { lintPaths } from '../lint.js';

const CORPUS = join(CORPORA_DIR, 'sigma');

/** A LogEvent shaped as the service sends it; cases override fields. */
function ev(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    uuid: '2a3c5f1e-0000-4000-8000-000000000001',
    published: '2024-05-01T10:00:00.000Z',
    eventType: 'user.session.start',
    displayMessage: 'User login to Okta',
    legacyEventType: 'core.user_auth.login_success',
    severity: 'INFO',
    actor: { id: '00u1', type: 'User', alternateId: 'alice@example.com', displayName: 'Alice' },
    client: { ipAddress: '203.0.113.9', userAgent: { rawUserAgent: 'Mozilla/5.0' } },
    outcome: { result: 'SUCCESS' },
    securityContext: { isProxy: false },
    debugContext: { debugData: { requestUri: '/api/v1/users' } },
    target: [{ id: '0oa1', type: 'AppInstance', displayName: 'Salesforce' }],
    ...over,
  };
}

type Case = { fire: Record<string, unknown>; miss: Record<string, unknown> };
const et = (eventType: string, alt = 'user.session.start'): Case => ({
  fire: ev({ eventType }),
  miss: ev({ eventType: alt }),
});

const CASES: Record<string, Case> = {
  okta_session_impersonation_granted: {
    fire: ev({ eventType: 'user.session.impersonation.grant', actor: { alternateId: 'mallory@evil.example' } }),
    miss: ev({ eventType: 'user.session.impersonation.grant', actor: { alternateId: 'system@okta.com' } }),
  },
  // Drafts removed upstream: every value is null, so they match an event without eventType and displayMessage.
  okta_user_account_mfa_bypass_attempt: {
    fire: ev({ eventType: null, displayMessage: null }),
    miss: ev({ displayMessage: null }),
  },
  okta_user_account_mfa_reset: {
    fire: ev({ eventType: undefined, displayMessage: undefined }),
    miss: ev({ eventType: undefined }),
  },
  okta_detect_suspicious_push_challenge: {
    fire: ev({ eventType: 'system.push.send_factor_verify_push' }),
    miss: ev({ eventType: 'system.push.other' }),
  },
  okta_password_health_report_query: {
    fire: ev({ debugContext: { debugData: { requestUri: '/reports/password-health/async_csv_download_schedule' } } }),
    miss: ev({ debugContext: { debugData: { requestUri: '/reports/other/' } } }),
  },
  okta_apt_suspicious_user_creation: {
    fire: ev({
      eventType: 'user.lifecycle.activate',
      target: [{ displayName: 'x' }, { displayName: 'svc_network_backup01' }],
    }),
    miss: ev({ eventType: 'user.lifecycle.create', target: [{ displayName: 'svc_backup' }] }),
  },
  okta_admin_role_assignment_created: et('iam.resourceset.bindings.add', 'iam.resourceset.bindings.delete'),
  okta_user_created: et('user.lifecycle.create', 'user.lifecycle.created.extra'),
  okta_policy_rule_modified_or_deleted: et('policy.rule.delete', 'policy.rule.create'),
  okta_fastpass_phishing_detection: {
    fire: ev({
      eventType: 'user.authentication.auth_via_mfa',
      outcome: { result: 'FAILURE', reason: 'FastPass declined phishing attempt' },
    }),
    miss: ev({
      eventType: 'user.authentication.auth_via_mfa',
      outcome: { result: 'SUCCESS', reason: 'FastPass declined phishing attempt' },
    }),
  },
  okta_unauthorized_access_to_app: {
    fire: ev({ displayMessage: 'User attempted unauthorized access to app' }),
    miss: ev({ displayMessage: 'User attempted unauthorized access to app again' }),
  },
  okta_user_account_locked_out: {
    fire: ev({ displayMessage: 'max sign in attempts exceeded' }),
    miss: ev({ displayMessage: 'Max sign in attempts' }),
  },
  okta_api_token_revoked: et('system.api_token.revoke', 'system.api_token.create'),
  okta_new_behaviours_admin_console: {
    fire: ev({
      eventType: 'policy.evaluate_sign_on',
      target: [{ displayName: 'Okta Admin Console' }],
      debugContext: { debugData: { behaviors: '{New Geo-Location=POSITIVE, New Device=NEGATIVE}' } },
    }),
    miss: ev({
      eventType: 'policy.evaluate_sign_on',
      target: [{ displayName: 'Okta Admin Console' }],
      debugContext: { debugData: { behaviors: '{New Geo-Location=NEGATIVE, New Device=NEGATIVE}' } },
    }),
  },
  okta_application_modified_or_deleted: et('application.lifecycle.update', 'application.lifecycle.create'),
  okta_user_session_start_via_anonymised_proxy: {
    fire: ev({ securityContext: { isProxy: true } }),
    miss: ev({ securityContext: { isProxy: false } }),
  },
  okta_mfa_reset_or_deactivated: et('user.mfa.factor.reset_all', 'user.mfa.factor.activate'),
  okta_admin_role_assigned_to_user_or_group: et('group.privilege.grant', 'group.privilege.revoke'),
  okta_api_token_created: et('system.api_token.create', 'system.api_token.revoke'),
  okta_security_threat_detected: et('security.threat.detected', 'security.request.blocked'),
  okta_suspicious_activity_enduser_report: et(
    'user.account.report_suspicious_activity_by_enduser',
    'user.account.lock',
  ),
  okta_password_in_alternateid_field: {
    fire: ev({ legacyEventType: 'core.user_auth.login_failed', actor: { alternateId: 'Hunter2!secret' } }),
    miss: ev({ legacyEventType: 'core.user_auth.login_failed', actor: { alternateId: 'bob@example.com' } }),
  },
  okta_policy_modified_or_deleted: et('policy.lifecycle.delete', 'policy.lifecycle.create'),
  okta_admin_activity_from_proxy_query: {
    fire: ev({ securityContext: { isProxy: 'true' }, debugContext: { debugData: { requestUri: '/admin/users' } } }),
    miss: ev({ securityContext: { isProxy: 'true' }, debugContext: { debugData: { requestUri: '/api/v1/users' } } }),
  },
  okta_network_zone_deactivated_or_deleted: et('zone.deactivate', 'zone.activate'),
  okta_identity_provider_created: et('system.idp.lifecycle.create', 'system.idp.lifecycle.update'),
  okta_application_sign_on_policy_modified_or_deleted: et(
    'application.policy.sign_on.rule.delete',
    'application.policy.sign_on.rule.create',
  ),
};

describe('Sigma Okta corpus', () => {
  const loaded = loadSigmaPaths([CORPUS]);

  it('loads all 27 rules, each with a test case here', () => {
    expect(loaded).toHaveLength(27);
    const names = loaded
      .map((l) =>
        l.file
          .split('/')
          .pop()!
          .replace(/\.yml$/, ''),
      )
      .sort();
    expect(names).toEqual(Object.keys(CASES).sort());
  });

  for (const [name, c] of Object.entries(CASES)) {
    it(`${name}: fires on a match, not on a near miss`, () => {
      const l = loaded.find((x) => x.file.endsWith(`/${name}.yml`));
      expect(l, name).toBeDefined();
      expect(l!.rule.where(c.fire)).toBe(true);
      expect(l!.rule.where(c.miss)).toBe(false);
    });
  }

  it('maps the near correlation to a sequence in either order over its timeframe', () => {
    const l = loaded.find((x) => x.file.endsWith('okta_detect_suspicious_push_challenge.yml'))!;
    expect(l.rule.kind).toBe('sequence');
    expect(l.rule.order).toBe('any');
    expect(l.rule.windowMs).toBe(600_000);
    const second = ev({
      eventType: 'user.authentication.auth_via_mfa',
      debugContext: { debugData: { factor: 'OKTA_VERIFY_PUSH' } },
    });
    expect(l.rule.then(second)).toBe(true);
    expect(
      l.rule.then(
        ev({ eventType: 'user.authentication.auth_via_mfa', debugContext: { debugData: { factor: 'SMS' } } }),
      ),
    ).toBe(false);
  });

  it('resolves |expand placeholders from configuration', () => {
    const [l] = loadSigmaPaths([join(CORPUS, 'rules-placeholder')], {
      placeholders: { legtimate_identifiers: ['@corp.example'] },
    });
    const grant = (alt: string) => ev({ eventType: 'user.session.impersonation.grant', actor: { alternateId: alt } });
    expect(l!.rule.where(grant('admin@corp.example'))).toBe(false);
    expect(l!.rule.where(grant('mallory@evil.example'))).toBe(true);
  });

  it('reads only LogEvent fields, as the engine maps Sigma names: rules lint --strict finds no field problem', () => {
    expect(lintPaths([CORPUS], undefined, { strict: true }).filter((p) => p.message.startsWith('"'))).toEqual([]);
  });

  it('notes the prose line before a draft document', () => {
    const l = loaded.find((x) => x.file.endsWith('okta_user_account_mfa_reset.yml'))!;
    expect(l.notes.join()).toContain('NOT READY YET');
  });
});
