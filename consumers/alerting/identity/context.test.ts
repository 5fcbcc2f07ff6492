/**
 * The filter language's operators on the actor context's lists (a path through a list holds when one element
 * does; `pr` on an empty list does not hold; `ne` holds when no element equals), group names an attacker chose
 * compared as data, and the store-side readers (hunt) refusing the paths the store's events never carry.
 */
import { describe, expect, it } from 'vitest';
import { parseFilter } from '../../../platform/filter/parse.js';
import { compileFilter } from '../filter/evaluate.js';
import { huntQuery } from '../filter/hunt.js';
import { addActorContext, NO_IDENTITY, type ActorContext, type ActorContextLookup } from './context.js';

const HOSTILE = '") or (actor.id pr) or ("\u202e<b>x</b>';

const users: Record<string, ActorContext> = {
  '00uada': {
    groups: ['Admins', HOSTILE],
    groupIds: ['00g1', '00g2'],
    adminRoles: ['ORG_ADMIN', 'SUPER_ADMIN'],
    status: 'ACTIVE',
  },
  '00ubob': { groups: ['Everyone'], groupIds: ['00g3'], adminRoles: [], status: 'SUSPENDED' },
};
const lookup: ActorContextLookup = { actor: (org, id) => (org === 'acme' ? users[id] : undefined) };

function event(id: string, org = 'acme', l: ActorContextLookup = lookup): Record<string, unknown> {
  const e: Record<string, unknown> = { eventType: 'user.session.start', actor: { id, type: 'User' } };
  addActorContext(e, org, l);
  return e;
}

describe('the filter language on the actor context', () => {
  it.each([
    ['actor.adminRoles eq "SUPER_ADMIN"', ['00uada']],
    ['actor.adminRoles eq "super_admin"', ['00uada']],
    ['actor.adminRoles in ["ORG_ADMIN", "APP_ADMIN"]', ['00uada']],
    ['actor.adminRoles pr', ['00uada']],
    ['not (actor.adminRoles pr)', ['00ubob', '00ucid']],
    ['actor.adminRoles ne "SUPER_ADMIN"', ['00ubob', '00ucid']],
    ['actor.groups co "min"', ['00uada']],
    ['actor.groups sw "every"', ['00ubob']],
    ['actor.groupIds eq "00g3"', ['00ubob']],
    ['actor.status eq "SUSPENDED"', ['00ubob']],
    ['actor.status eq null', ['00ucid']],
    [`actor.groups eq ${JSON.stringify(HOSTILE)}`, ['00uada']],
  ])('%s', (filter, want) => {
    const p = compileFilter(filter);
    expect(['00uada', '00ubob', '00ucid'].filter((id) => p(event(id)))).toEqual(want);
  });

  it('the org is part of the lookup: the same user id in another org has no context', () => {
    expect(compileFilter('actor.adminRoles pr')(event('00uada', 'globex'))).toBe(false);
    expect(event('00uada', 'globex')['actor']).toEqual({
      id: '00uada',
      type: 'User',
      groups: [],
      groupIds: [],
      adminRoles: [],
    });
  });

  it("replaces what the event's actor carried under the context's names, in any spelling", () => {
    const e: Record<string, unknown> = {
      actor: {
        id: '00ucid',
        type: 'User',
        adminRoles: ['SUPER_ADMIN'],
        ADMIN_ROLES: ['SUPER_ADMIN'],
        Status: 'ACTIVE',
        groups: ['Admins'],
      },
    };
    addActorContext(e, 'acme', NO_IDENTITY);
    expect(e['actor']).toEqual({ id: '00ucid', type: 'User', groups: [], groupIds: [], adminRoles: [] });
    expect(compileFilter('actor.admin_roles eq "SUPER_ADMIN" or actor.status pr')(e)).toBe(false);
  });

  it('leaves an event without an actor object alone', () => {
    const e: Record<string, unknown> = { eventType: 'system.x', actor: 'not an object' };
    addActorContext(e, 'acme', lookup);
    expect(e).toEqual({ eventType: 'system.x', actor: 'not an object' });
  });
});

describe('readers of the store', () => {
  it('hunt refuses the context paths: the stored events never carry them', () => {
    expect(() => huntQuery(parseFilter('eventType pr and actor.AdminRoles eq "SUPER_ADMIN"'))).toThrow(
      /"actor\.AdminRoles" is identity context .* a hunt cannot filter on it/,
    );
    expect(huntQuery(parseFilter('actor.id eq "00uada"')).where).toBeTruthy();
  });
});
