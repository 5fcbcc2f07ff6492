/**
 * Planning, on configs parsed as production parses them and hooks shaped as
 * the service lists them: what is created, changed, left alone, pruned, and
 * refused under the inline-hook limit; the secret told by its id.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { desiredHooks, secretId, type DesiredHook } from './desired.js';
import { describePlan, planOrg, shown, type OrgHooks } from './plan.js';
import { registrationBody, type RegisteredHook } from './service.js';

const SECRET = 'event-hook-secret-0123456789';
const NEW = 'event-hook-secret-NEW-456789';

function config(over: { secrets?: string[]; types?: string[]; tokens?: number; publicUrl?: string } = {}) {
  return parseConfig(
    {
      hook_registration: { public_url: over.publicUrl ?? 'https://hooklog.example.com/' },
      orgs: [{ id: 'acme', base_url: 'https://acme.example.com', auth: { ssws: { token: 't' } } }],
      event_hooks: [
        {
          id: 'main',
          org: 'acme',
          auth: { secrets: over.secrets ?? [SECRET] },
          register: { event_types: over.types ?? ['user.session.start', 'user.authentication.sso'] },
        },
        { id: 'unregistered', org: 'acme', auth: { secrets: [SECRET] } },
      ],
      token_hooks: Array.from({ length: over.tokens ?? 1 }, (_, i) => ({
        id: `tokens${i}`,
        org: 'acme',
        auth: { type: 'header', secrets: [SECRET] },
        register: {},
      })),
    },
    {},
  );
}

/** A hook as the service would list it after registering `d` (the secret left out, as it never returns it). */
function registered(d: DesiredHook, over: Partial<RegisteredHook> = {}): RegisteredHook {
  const body = registrationBody(d) as { channel: { config: { authScheme: Record<string, unknown> } } };
  const { value: _secret, ...auth } = body.channel.config.authScheme;
  return {
    id: `id-${d.id}`,
    status: 'ACTIVE',
    ...(d.kind === 'event' ? { verificationStatus: 'VERIFIED' } : {}),
    ...body,
    channel: { ...body.channel, config: { ...body.channel.config, method: 'POST', authScheme: auth } },
    ...over,
  } as RegisteredHook;
}

const plan = (desired: DesiredHook[], hooks: OrgHooks, prune = false) =>
  planOrg(desired, hooks, { org: 'acme', prefix: 'hooklog:', prune });

describe('hook registration plan', () => {
  it('derives each registered hook from the config: name, URI, header, the first secret', () => {
    const [event, token] = desiredHooks(config());
    expect(event).toMatchObject({
      kind: 'event',
      name: 'hooklog:main',
      uri: 'https://hooklog.example.com/hooks/events/main',
      header: 'authorization',
      eventTypes: ['user.authentication.sso', 'user.session.start'],
    });
    expect(token).toMatchObject({
      kind: 'inline',
      name: 'hooklog:tokens0',
      uri: 'https://hooklog.example.com/hooks/token/tokens0',
    });
    expect(registrationBody(event!)).toMatchObject({
      channel: {
        config: { authScheme: { value: SECRET }, headers: [{ key: 'x-hooklog-secret-id', value: secretId(SECRET) }] },
      },
    });
    expect(secretId(SECRET)).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.stringify(registrationBody(event!).channel).split(SECRET)).toHaveLength(2); // the value, once
  });

  it('creates what is missing, leaves what matches alone, and never touches hooks it did not create', () => {
    const d = desiredHooks(config());
    const foreign = { ...registered(d[0]!), id: 'other', name: 'Splunk' };
    const empty = plan(d, { event: [foreign], inline: [] });
    expect(empty.map((p) => [p.id, p.steps])).toEqual([
      ['main', ['create', 'verify']],
      ['tokens0', ['create']],
    ]);
    const synced = plan(d, { event: [foreign, registered(d[0]!)], inline: [registered(d[1]!)] });
    expect(synced.map((p) => p.steps)).toEqual([[], []]);
    expect(describePlan(synced[0]!)).toBe('= event hook "main" (org acme, id-main): in sync (ACTIVE, VERIFIED)');
  });

  it('updates the whole hook when it differs, verifies again when the channel changed, activates what is inactive', () => {
    const d = desiredHooks(config());
    const types = plan(d, {
      event: [registered(d[0]!, { events: { items: ['user.session.start', 'user.lifecycle.create'] } })],
      inline: [registered(d[1]!, { status: 'INACTIVE' })],
    });
    expect(types.map((p) => p.steps)).toEqual([['update'], ['activate']]);
    expect(describePlan(types[0]!)).toContain('update (events +user.authentication.sso -user.lifecycle.create)');
    const uri = registered(d[0]!);
    const moved = {
      ...uri,
      channel: { ...uri.channel, config: { ...uri.channel.config, uri: 'https://old.example.com/x' } },
    };
    expect(plan(d, { event: [moved], inline: [registered(d[1]!)] })[0]!.steps).toEqual(['update', 'verify']);
    const unverified = plan(d, {
      event: [registered(d[0]!, { verificationStatus: 'UNVERIFIED' })],
      inline: [registered(d[1]!)],
    });
    expect(unverified[0]!.steps).toEqual(['verify']);
  });

  it('compares URIs normalised: a public_url written otherwise is in sync with what the service stores', () => {
    const d = desiredHooks(config({ publicUrl: 'HTTPS://Hooklog.Example.com:443/' }));
    expect(d.map((h) => h.uri)).toEqual([
      'https://hooklog.example.com/hooks/events/main',
      'https://hooklog.example.com/hooks/token/tokens0',
    ]);
    const stored = (h: DesiredHook, uri: string) => {
      const r = registered(h);
      return { ...r, channel: { ...r.channel, config: { ...r.channel.config, uri } } };
    };
    const normal = plan(d, { event: [registered(d[0]!)], inline: [registered(d[1]!)] });
    expect(normal.map((p) => p.steps)).toEqual([[], []]);
    // A hook stored as the text was written (by a service that keeps it verbatim) is the same URI.
    const verbatim = plan(d, {
      event: [stored(d[0]!, 'HTTPS://Hooklog.Example.com:443/hooks/events/main')],
      inline: [stored(d[1]!, 'https://hooklog.example.com:443/hooks/token/tokens0')],
    });
    expect(verbatim.map((p) => p.steps)).toEqual([[], []]);
    const elsewhere = plan(d, {
      event: [stored(d[0]!, 'https://hooklog.example.com:8443/hooks/events/main')],
      inline: [],
    });
    expect(elsewhere[0]!.steps).toEqual(['update', 'verify']);
  });

  it('tells which secret the service holds: a rotation registers the first and says when the second can go', () => {
    const old = desiredHooks(config({ secrets: [SECRET] }))[0]!;
    const rotating = desiredHooks(config({ secrets: [NEW, SECRET] }));
    const before = plan(rotating, { event: [registered(old)], inline: [registered(rotating[1]!)] })[0]!;
    expect(before.drift?.secret).toBe(2);
    expect(before.steps).toEqual(['update', 'verify']);
    const after = plan(rotating, { event: [registered(rotating[0]!)], inline: [registered(rotating[1]!)] })[0]!;
    expect(after.drift?.secret).toBe(1);
    expect(after.steps).toEqual([]);
    expect(after.notes.join()).toContain('once no delivery carries the second, remove it');
    const stranger = plan(desiredHooks(config({ secrets: [NEW] })), { event: [registered(old)], inline: [] })[0]!;
    expect(stranger.drift?.differences).toContain('secret: not one of auth.secrets');
  });

  it('claims only hooks it can prove it made: one merely named like its own is left alone, never updated or pruned', () => {
    const d = desiredHooks(config());
    // Another admin's hooks, named like hooklog's, with another URI and secret (and no x-hooklog-secret-id).
    const theirs = (id: string): RegisteredHook => ({
      ...registered(d[0]!),
      id,
      channel: {
        type: 'HTTP',
        version: '1.0.0',
        config: {
          uri: 'https://siem.example.com/in',
          headers: [],
          authScheme: { type: 'HEADER', key: 'authorization' },
        },
      },
    });
    const fresh = plan(d, { event: [theirs('theirs1'), theirs('theirs2')], inline: [registered(d[1]!)] }, true);
    expect(fresh.map((p) => [p.id, p.registered?.id ?? null, p.steps])).toEqual([
      ['hooklog:main', 'theirs1', []],
      ['hooklog:main', 'theirs2', []],
      ['main', null, ['create', 'verify']],
      ['tokens0', 'id-tokens0', []],
    ]);
    expect(describePlan(fresh[0]!)).toBe(
      '? event hook "hooklog:main" (org acme, theirs1): left alone: named like hooklog\'s hooks, but not made by hooklog ' +
        '(no x-hooklog-secret-id header; it calls "https://siem.example.com/in"): rename it, or give hooklog another hook_registration.name_prefix',
    );
    // Beside hooklog's own: a proven second hook of its name is pruned, theirs still is not.
    const dup = { ...registered(d[0]!), id: 'dup' };
    const both = plan(d, { event: [registered(d[0]!), theirs('theirs1'), dup], inline: [registered(d[1]!)] }, true);
    expect(both.filter((p) => p.steps.length).map((p) => [p.registered!.id, p.steps])).toEqual([
      ['dup', ['deactivate', 'delete']],
    ]);
    expect(both.find((p) => p.id === 'main')!.registered!.id).toBe('id-main');
    // What another admin chose is shown bounded, with invisible characters drawn.
    expect(shown('a\u200bb"\n')).toBe('"a\\u{200b}b\\"\\u{a}"');
    expect(shown('x'.repeat(300), 10)).toBe(`"${'x'.repeat(10)}…"`);
  });

  it('removes its own unconfigured hooks only with prune: deactivate, then delete', () => {
    const d = desiredHooks(config());
    const gone = { ...registered(d[1]!), id: 'stale', name: 'hooklog:retired' };
    const kept = plan(d, { event: [registered(d[0]!)], inline: [registered(d[1]!), gone] });
    expect(kept[0]).toMatchObject({ id: 'hooklog:retired', steps: [] });
    expect(describePlan(kept[0]!)).toContain('`hooklog hooks apply --prune` deactivates and deletes it');
    const pruned = plan(d, { event: [registered(d[0]!)], inline: [registered(d[1]!), gone] }, true);
    expect(pruned[0]!.steps).toEqual(['deactivate', 'delete']);
    const inactive = plan(
      d,
      { event: [registered(d[0]!)], inline: [registered(d[1]!), { ...gone, status: 'INACTIVE' }] },
      true,
    );
    expect(inactive[0]!.steps).toEqual(['delete']);
  });

  it('refuses to create past 10 inline hooks per org (all types), counting what prune frees', () => {
    const d = desiredHooks(config({ tokens: 3 }));
    const foreign = Array.from({ length: 8 }, (_, i) => ({ ...registered(d[1]!), id: `f${i}`, name: `other ${i}` }));
    const full = plan(d, { event: [registered(d[0]!)], inline: foreign });
    expect(full.map((p) => [p.id, p.steps, p.refused !== null])).toEqual([
      ['main', [], false],
      ['tokens0', ['create'], false],
      ['tokens1', ['create'], false],
      ['tokens2', [], true],
    ]);
    expect(describePlan(full[3]!)).toBe(
      '! token hook "tokens2" (org acme): cannot create: the org has 10 inline hooks and the service allows 10 per org (all types); delete one it no longer needs',
    );
    const stale = { ...registered(d[1]!), id: 'stale', name: 'hooklog:retired', status: 'INACTIVE' };
    const roomy = plan(d, { event: [registered(d[0]!)], inline: [...foreign.slice(1), stale] }, true);
    expect(roomy.filter((p) => p.refused)).toEqual([]);
    expect(roomy[0]).toMatchObject({ id: 'hooklog:retired', steps: ['delete'] });
  });

  it('refuses configs it cannot register, naming both keys', () => {
    const base = {
      orgs: [{ id: 'acme', base_url: 'https://acme.example.com', auth: { ssws: { token: 't' } } }],
      event_hooks: [{ id: 'main', org: 'acme', auth: { secrets: [SECRET] }, register: { event_types: ['a.b'] } }],
    };
    expect(() => parseConfig(base, {})).toThrow(/event_hooks\.0\.register.*needs hook_registration\.public_url/);
    expect(() =>
      parseConfig({ ...base, hook_registration: { public_url: 'https://h.example.com' }, orgs: [] }, {}),
    ).toThrow(/event_hooks\.0\.register.*there is none with id "acme"/);
    expect(() =>
      parseConfig(
        {
          ...base,
          hook_registration: { public_url: 'https://h.example.com' },
          token_hooks: [
            {
              id: 't',
              org: 'acme',
              auth: { type: 'oauth', issuer: 'https://a.example.com', audience: 'x', scope: 's' },
              register: {},
            },
          ],
        },
        {},
      ),
    ).toThrow(/token_hooks\.0\.register.*auth\.type header/);
  });

  it('refuses a public_url that is not https at load (the service calls only https), naming the key', () => {
    const base = {
      orgs: [{ id: 'acme', base_url: 'https://acme.example.com', auth: { ssws: { token: 't' } } }],
      event_hooks: [{ id: 'main', org: 'acme', auth: { secrets: [SECRET] }, register: { event_types: ['a.b'] } }],
    };
    const at = (publicUrl: string) => () => parseConfig({ ...base, hook_registration: { public_url: publicUrl } }, {});
    expect(at('http://hooklog.example.com')).toThrow(
      /hook_registration\.public_url.*must be an https:\/\/ URL: the identity service calls hooks only over https/,
    );
    expect(at('ftp://hooklog.example.com')).toThrow(/hook_registration\.public_url.*must be an https:\/\/ URL/);
    expect(at('HTTPS://hooklog.example.com:443')).not.toThrow();
  });
});
