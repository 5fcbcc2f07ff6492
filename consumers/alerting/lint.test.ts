/**
 * `hooklog rules lint` checks every field path a rule reads against the LogEvent's fields, nested segments
 * included, wherever the rule reads it: filters, Sigma selections, `fields`, `group_by`, title, severity
 * and dedup. A path that can never match is an error; one the service may yet add is a warning, an error
 * with `strict`. The shipped content passes strict.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CONTENT_DIR } from './index.js';
import { lintPaths, type LintOptions } from './lint.js';

const dir = mkdtempSync(join(tmpdir(), 'hooklog-lint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function lint(name: string, files: Record<string, string>, o: LintOptions = {}) {
  const d = join(dir, name);
  mkdirSync(d);
  for (const [f, text] of Object.entries(files)) writeFileSync(join(d, f), text);
  return lintPaths([d], undefined, o).map((p) => [`${p.file.split('/').pop()}:${p.line}`, p.severity, p.message]);
}

describe('rules lint: field paths against the LogEvent schema', () => {
  it('flags a nested segment a documented object lacks as an error, naming the near miss', () => {
    const rows = lint('nested', {
      'rules.yaml': stringify([
        { id: 'typo', detection: 'eventType eq "user.session.start" and outcome.reslt eq "FAILURE"' },
        { id: 'past-a-value', detection: { sel: { 'client.ipAddress.city': 'Paris' }, condition: 'sel' } },
        { id: 'fine', detection: 'outcome.result eq "FAILURE" and client.geographicalContext.geolocation.lat gt 1' },
      ]),
    });
    expect(rows).toEqual([
      [
        'rules.yaml:2',
        'error',
        '"outcome.reslt" is not a LogEvent field: outcome has no field "reslt", so it matches nothing whatever the event; did you mean outcome.result?',
      ],
      [
        'rules.yaml:6',
        'error',
        '"client.ipAddress.city" is not a LogEvent field: client.ipAddress is a single value with no fields, so it matches nothing whatever the event; did you mean client.geographicalContext.city?',
      ],
    ]);
  });

  it('takes the identity context paths (strict too) and names them for a near miss', () => {
    const rows = lint(
      'identity',
      {
        'rules.yaml': stringify([
          {
            id: 'context',
            detection:
              'actor.adminRoles eq "SUPER_ADMIN" and actor.groups co "admin" and actor.groupIds pr and actor.status ne "SUSPENDED"',
          },
          { id: 'sigma-style', detection: { sel: { 'actor.admin_roles': 'ORG_ADMIN' }, condition: 'sel' } },
          { id: 'near-miss', detection: 'actor.adminRole eq "SUPER_ADMIN"' },
          { id: 'near-miss-group', detection: { sel: { 'actor.group': 'Admins' }, condition: 'sel' } },
        ]),
      },
      { strict: true },
    );
    expect(rows).toEqual([
      [
        'rules.yaml:10',
        'error',
        '"actor.adminRole" is not a LogEvent field: actor has no field "adminRole", so it matches nothing whatever the event; did you mean actor.adminRoles?',
      ],
      [
        'rules.yaml:14',
        'error',
        '"actor.group" is not a LogEvent field: actor has no field "group", so it matches nothing whatever the event; did you mean actor.groups?',
      ],
    ]);
  });

  it("checks Sigma selections as the engine reads them (okta. prefix, any case, `_` ignored, |fieldref's field)", () => {
    const sigma = {
      title: 'Sigma as published',
      id: '5c8a3b1e-0000-4000-8000-000000000001',
      logsource: { product: 'okta' },
      detection: {
        sel: {
          eventtype: 'user.mfa.factor.deactivate',
          'okta.debug_context.debug_data.factor|contains': 'push',
          'displaymessage|contains': 'x',
          'okta.outcome.resul': 'SUCCESS',
          'actor.alternateId|fieldref': 'target.alternatId',
        },
        keywords: ['anything at all'],
        condition: 'sel or keywords',
      },
      level: 'high',
    };
    const correlation = {
      title: 'Two of them',
      name: 'two',
      correlation: { type: 'event_count', rules: [sigma.id], 'group-by': ['actor.alternat_id'], timespan: '10m' },
      condition: { gte: 2 },
    };
    const rows = lint('sigma', { 'rule.yml': stringify(sigma), 'corr.yml': stringify(correlation) });
    expect(rows).toEqual([
      [
        'corr.yml:8',
        'error',
        '"actor.alternat_id" (in group-by) is not a LogEvent field: actor has no field "alternat_id", so it is always null whatever the event; did you mean actor.alternateId?',
      ],
      [
        'rule.yml:10',
        'error',
        '"okta.outcome.resul" is not a LogEvent field: outcome has no field "resul", so it matches nothing whatever the event; did you mean outcome.result?',
      ],
      [
        'rule.yml:11',
        'warning',
        '"target.alternatId" is not a LogEvent field: it matches nothing on a real event; did you mean target.alternateId?',
      ],
    ]);
  });

  it('checks fields, group_by, distinct_field and the paths title, severity and dedup read', () => {
    const rows = lint('values', {
      'rules.yaml': stringify([
        {
          id: 'travel',
          type: 'stateful',
          detection: 'eventType eq "user.session.start"',
          fields: {
            lat: 'client.geographicalContext.geolocation.lat',
            lon: 'client.geographicalContext.geolocatoin.lon',
          },
          group_by: ['actor.id'],
          when: 'lat != prev.lat or lon != prev.lon',
          title: 'Travel by {{ actor.alternateId }} from {{ securityContext.isProxyy }}',
        },
        {
          id: 'spread',
          type: 'distinct',
          window_ms: 60_000,
          threshold: 3,
          detection: 'eventType eq "user.session.start"',
          group_by: ['debugData.dtHash'],
          distinct_field: 'client.ipAdress',
          severity: "if(outcome.reason == 'x', 'high', 'low')",
          dedup: 'lower(actor.displayNam)',
        },
      ]),
    });
    expect(rows).toEqual([
      [
        'rules.yaml:6',
        'error',
        '"client.geographicalContext.geolocatoin.lon" (in fields.lon) is not a LogEvent field: client.geographicalContext has no field "geolocatoin", so it is always null whatever the event; did you mean client.geographicalContext.geolocation.lon?',
      ],
      [
        'rules.yaml:10',
        'warning',
        '"securityContext.isProxyy" (in title, severity or dedup) is not a LogEvent field nor one of the rule\'s fields: it is always null on a real event; did you mean securityContext.isProxy?',
      ],
      [
        'rules.yaml:17',
        'warning',
        '"debugData.dtHash" (in group_by) is not a LogEvent field: it is always null on a real event; did you mean debugContext.debugData.dtHash?',
      ],
      [
        'rules.yaml:18',
        'warning',
        '"client.ipAdress" (in distinct_field) is not a LogEvent field: it is always null on a real event; did you mean client.ipAddress?',
      ],
      [
        'rules.yaml:20',
        'error',
        '"actor.displayNam" (in title, severity or dedup) is not a LogEvent field nor one of the rule\'s fields: actor has no field "displayNam", so it is always null whatever the event; did you mean actor.displayName?',
      ],
    ]);
  });

  it('leaves free-form maps, list positions and `*` alone', () => {
    const rows = lint(
      'free',
      {
        'rules.yaml': stringify([
          {
            id: 'maps',
            detection: {
              sel: {
                'debugContext.debugData.anyKeyAtAll': 'x',
                'target.detailEntry.oktaDeviceId|exists': true,
                'target.1.changeDetails.to.policyRuleActionJson.appSignOn.verificationMethod.factorMode': '1FA',
                'actor.detailEntry.osVersion': '15',
                'transaction.detail.requestApiTokenId|exists': true,
                'p_enrichment.greynoise_noise.*.internet_scanner_intelligence.classification': 'malicious',
                'request.ipChain.0.geographicalContext.country': 'NL',
                'authenticationContext.authenticatorContext.bindingMethod': 'PUSH',
              },
              condition: 'sel',
            },
            group_by: ['target.0.alternateId'],
          },
        ]),
      },
      { strict: true },
    );
    expect(rows).toEqual([]);
  });

  it('strict: a field the service may yet add is an error too; an aliased filter attribute stays a note', () => {
    const files = {
      'rules.yaml': stringify([
        { id: 'new', detection: 'eventType eq "a" and result eq "FAILURE" and riskScore gt 5' },
      ]),
    };
    const warn = '"riskScore" is not a LogEvent field: it matches nothing on a real event';
    const alias = '"result" is not a LogEvent field; read as outcome.result';
    expect(lint('open', files)).toEqual([
      ['rules.yaml:2', 'warning', alias],
      ['rules.yaml:2', 'warning', warn],
    ]);
    expect(lint('open-strict', files, { strict: true })).toEqual([
      ['rules.yaml:2', 'warning', alias],
      ['rules.yaml:2', 'error', warn],
    ]);
  });

  it("checks the config's own rules (alerting.rules) at their line in the config", () => {
    const config = join(dir, 'hooklog.yaml');
    const inline = [
      { id: 'ok', detection: 'eventType eq "a"' },
      {
        id: 'typo',
        type: 'threshold',
        window_ms: 60_000,
        group_by: ['actor.alternateIdd'],
        detection: 'eventType eq "a"',
      },
    ];
    writeFileSync(config, stringify({ alerting: { rules: inline } }));
    const risk = { file: config, byId: {}, inline, strict: true };
    expect(lintPaths([], risk).map((p) => [`${p.file.split('/').pop()}:${p.line}`, p.severity, p.message])).toEqual([
      [
        'hooklog.yaml:9',
        'error',
        '"actor.alternateIdd" (in group_by) is not a LogEvent field: actor has no field "alternateIdd", so it is always null whatever the event; did you mean actor.alternateId?',
      ],
    ]);
  });

  it('the shipped content passes strict', () => {
    expect(lintPaths([CONTENT_DIR], undefined, { strict: true })).toEqual([]);
  });
});
