/**
 * Conformance with the token inline hook protocol (protocols.md §2), built
 * from its request and answer shapes and the project's sample request: requests go
 * through the real answer path (`decide`: parse, rules, answer checks) of
 * hooks compiled from parsed config; answers are compared byte for byte.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkAnswer } from './answer.js';
import { accessPatch, idPatch, sampleRequest, tokenHookHarness } from './testing.js';

const { hookWith, answer, dir } = tokenHookHarness('token-conformance');

describe('requests as the service sends them', () => {
  it('ID-token-only requests (no data.access) never get an access patch', async () => {
    const hook = await hookWith([
      { name: 'both', actions: [{ add: { tokens: 'both', claim: 'b', value: 1 } }] },
      {
        name: 'access-only',
        actions: [
          { add: { tokens: 'access', claim: 'a', value: 2 } },
          { lifetime: { tokens: 'access', seconds: 600 } },
        ],
      },
    ]);
    const req = sampleRequest();
    delete req.data.access;
    expect(answer(hook, req)).toEqual({
      status: 200,
      json: { commands: [idPatch({ op: 'add', path: '/claims/b', value: 1 })] },
    });
    const accessOnly = await hookWith([
      { name: 'access-only', actions: [{ add: { tokens: 'access', claim: 'a', value: 2 } }] },
    ]);
    expect(answer(accessOnly, req)).toEqual({ status: 204 });
    // And the per-answer check refuses one, whoever wrote it.
    expect(
      checkAnswer({ commands: [accessPatch({ op: 'add', path: '/claims/a', value: 2 })] }, { id: true, access: false }),
    ).toMatch(/no data\.access/);
  });

  it('access-token-only requests (no data.identity) get no identity patch', async () => {
    const hook = await hookWith([{ name: 'both', actions: [{ add: { tokens: 'both', claim: 'b', value: 'x' } }] }]);
    const req = sampleRequest();
    delete req.data.identity;
    expect(answer(hook, req)).toEqual({
      status: 200,
      json: { commands: [accessPatch({ op: 'add', path: '/claims/b', value: 'x' })] },
    });
  });

  it('refresh grants: grant_type refresh_token, or OriginalGrant without grant_type, match grant_type rules', async () => {
    const hook = await hookWith([
      {
        name: 'refresh',
        when: { grant_type: ['refresh_token'] },
        actions: [{ lifetime: { tokens: 'access', seconds: 900 } }],
      },
    ]);
    const refreshed = accessPatch({ op: 'replace', path: '/token/lifetime/expiration', value: 900 });
    const initial = sampleRequest();
    expect(answer(hook, initial)).toEqual({ status: 204 });
    const byOriginalGrant = sampleRequest();
    byOriginalGrant.data.context.protocol.OriginalGrant = {
      request: { scope: 'openid offline_access' },
      refresh_token: { jti: 'oar1' },
    };
    byOriginalGrant.data.refresh_token = { jti: 'oar2' };
    expect(answer(hook, byOriginalGrant)).toEqual({ status: 200, json: { commands: [refreshed] } });
    const byGrantType = sampleRequest();
    byGrantType.data.context.protocol.request.grant_type = 'refresh_token';
    expect(answer(hook, byGrantType)).toEqual({ status: 200, json: { commands: [refreshed] } });
    const code = sampleRequest();
    code.data.context.protocol.request.grant_type = 'authorization_code';
    code.data.context.protocol.OriginalGrant = {};
    expect(answer(hook, code)).toEqual({ status: 204 });
  });

  it('accepts cloudEventVersion and cloudEventsVersion alike, and refuses other event types', async () => {
    const hook = await hookWith([{ name: 'r', actions: [{ add: { tokens: 'id', claim: 'c', value: 1 } }] }]);
    const a = sampleRequest();
    delete a.cloudEventVersion;
    a.cloudEventsVersion = '0.1';
    expect(answer(hook, a).status).toBe(200);
    const saml = sampleRequest();
    saml.eventType = 'com.okta.saml.tokens.transform';
    expect(answer(hook, saml)).toEqual({
      status: 400,
      json: { error: 'eventType must be com.okta.oauth2.tokens.transform' },
    });
  });
});

describe('every action type', () => {
  it('add and replace literals of every JSON type, remove, lifetime — in rule order', async () => {
    const hook = await hookWith([
      {
        name: 'literals',
        actions: [
          { add: { tokens: 'id', claim: 's', value: 'R&D' } },
          { add: { tokens: 'id', claim: 'n', value: 2 } },
          { add: { tokens: 'id', claim: 'b', value: true } },
          { add: { tokens: 'access', claim: 'arr', value: ['one', 'two'] } },
          { replace: { tokens: 'access', claim: 'obj', value: { k: 'v', nested: [1] } } },
          { remove: { tokens: 'both', claim: 'legacy' } },
        ],
      },
      {
        name: 'lifetimes',
        actions: [{ lifetime: { tokens: 'id', seconds: 300 } }, { lifetime: { tokens: 'access', seconds: 86_400 } }],
      },
    ]);
    expect(answer(hook, sampleRequest())).toEqual({
      status: 200,
      json: {
        commands: [
          idPatch(
            { op: 'add', path: '/claims/s', value: 'R&D' },
            { op: 'add', path: '/claims/n', value: 2 },
            { op: 'add', path: '/claims/b', value: true },
            { op: 'remove', path: '/claims/legacy' },
            { op: 'replace', path: '/token/lifetime/expiration', value: 300 },
          ),
          accessPatch(
            { op: 'add', path: '/claims/arr', value: ['one', 'two'] },
            { op: 'replace', path: '/claims/obj', value: { k: 'v', nested: [1] } },
            { op: 'remove', path: '/claims/legacy' },
            { op: 'replace', path: '/token/lifetime/expiration', value: 86_400 },
          ),
        ],
      },
    });
  });

  it('templates over the request context; a template with an absent variable is left out', async () => {
    const hook = await hookWith([
      {
        name: 'tpl',
        actions: [
          {
            add: {
              tokens: 'id',
              claim: 'who',
              template: '{{user.profile.firstName}} {{ user.profile.lastName }} <{{user.login}}>',
            },
          },
          {
            add: {
              tokens: 'access',
              claim: 'ctx',
              template:
                '{{client.id}}|{{scopes}}|{{session.amr}}|{{session.mfa_active}}|{{policy.rule_id}}|{{request.ip}}|{{access.claims.uid}}|{{identity.claims.ver}}',
            },
          },
          { add: { tokens: 'access', claim: 'absent', template: 'x-{{user.profile.department}}' } },
        ],
      },
    ]);
    expect(answer(hook, sampleRequest())).toEqual({
      status: 200,
      json: {
        commands: [
          idPatch({ op: 'add', path: '/claims/who', value: 'Ada Lovelace <ada.lovelace@acme.example>' }),
          accessPatch({
            op: 'add',
            path: '/claims/ctx',
            value:
              'customerPortalWeb|openid profile email|PASSWORD|false|0pracmeSignOnRule1x7|127.0.0.1|00uacme0ada0000001x7|1',
          }),
        ],
      },
    });
  });

  it('lookups from CSV and JSON tables; a miss uses the default or leaves the action out', async () => {
    const csv = join(dir, 'employees.csv');
    writeFileSync(
      csv,
      'login,department,"cost center"\nADA.LOVELACE@acme.example,"R&D, Labs",42\nother@x.com,Sales,7\n',
    );
    const json = join(dir, 'roles.json');
    writeFileSync(json, JSON.stringify({ customerPortalWeb: { roles: ['admin', 'ops'], tier: 3 } }));
    const hook = await hookWith(
      [
        {
          name: 'lk',
          actions: [
            {
              add: {
                tokens: 'id',
                claim: 'department',
                lookup: { table: 'employees', key: '{{user.login}}', column: 'department' },
              },
            },
            {
              add: {
                tokens: 'id',
                claim: 'cost',
                lookup: { table: 'employees', key: '{{user.login}}', column: 'cost center' },
              },
            },
            {
              add: {
                tokens: 'access',
                claim: 'roles',
                lookup: { table: 'roles', key: '{{client.id}}', column: 'roles' },
              },
            },
            { add: { tokens: 'access', claim: 'app', lookup: { table: 'roles', key: '{{client.id}}' } } },
            { add: { tokens: 'access', claim: 'missing', lookup: { table: 'roles', key: 'nobody', default: 'none' } } },
            {
              add: {
                tokens: 'access',
                claim: 'left-out',
                lookup: { table: 'employees', key: 'nobody', column: 'department' },
              },
            },
          ],
        },
      ],
      {
        lookups: [
          { name: 'employees', file: csv, format: 'csv', key: 'login', ignore_case: true },
          { name: 'roles', file: json, format: 'json' },
        ],
      },
    );
    expect(answer(hook, sampleRequest())).toEqual({
      status: 200,
      json: {
        commands: [
          idPatch(
            { op: 'add', path: '/claims/department', value: 'R&D, Labs' },
            { op: 'add', path: '/claims/cost', value: '42' },
          ),
          accessPatch(
            { op: 'add', path: '/claims/roles', value: ['admin', 'ops'] },
            { op: 'add', path: '/claims/app', value: { roles: ['admin', 'ops'], tier: 3 } },
            { op: 'add', path: '/claims/missing', value: 'none' },
          ),
        ],
      },
    });
  });

  it('deny: an error answer, later rules not run, earlier operations discarded', async () => {
    const hook = await hookWith([
      { name: 'first', actions: [{ add: { tokens: 'id', claim: 'c', value: 1 } }] },
      {
        name: 'block',
        when: { user_login: { suffix: '@acme.example' } },
        actions: [{ deny: { error_summary: 'User is not a patient.' } }],
      },
      { name: 'never', actions: [{ add: { tokens: 'id', claim: 'd', value: 2 } }] },
    ]);
    expect(answer(hook, sampleRequest())).toEqual({
      status: 200,
      json: { error: { errorSummary: 'User is not a patient.' } },
    });
    const other = sampleRequest();
    other.data.context.user.profile.login = 'someone@example.com';
    expect(answer(hook, other)).toEqual({
      status: 200,
      json: {
        commands: [idPatch({ op: 'add', path: '/claims/c', value: 1 }, { op: 'add', path: '/claims/d', value: 2 })],
      },
    });
  });

  it('204 when no rule matches, when no rules exist, and when every action is left out; stop ends evaluation', async () => {
    const none = await hookWith([
      { name: 'mfa', when: { mfa_active: true }, actions: [{ add: { tokens: 'id', claim: 'c', value: 1 } }] },
    ]);
    expect(answer(none, sampleRequest())).toEqual({ status: 204 });
    expect(answer(await hookWith([]), sampleRequest())).toEqual({ status: 204 });
    const stop = await hookWith([
      { name: 'a', actions: [{ add: { tokens: 'id', claim: 'a', value: 1 } }], stop: true },
      { name: 'b', actions: [{ add: { tokens: 'id', claim: 'b', value: 1 } }] },
    ]);
    expect(answer(stop, sampleRequest())).toEqual({
      status: 200,
      json: { commands: [idPatch({ op: 'add', path: '/claims/a', value: 1 })] },
    });
  });
});
