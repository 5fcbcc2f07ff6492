/**
 * `in list("name")` in the filter language: how it parses, what it means on an event (the address at the
 * path is in the named IP list, platform/iplists/), and that a name no list has, or a search, is refused.
 */
import { describe, expect, it } from 'vitest';
import { compileFilter } from './evaluate.js';
import { FilterSyntaxError, filterLists, parseFilter } from '../../../platform/filter/parse.js';
import { compileFilterSql } from '../../../platform/filter/sql.js';
import { staticIpLists } from '../../../platform/iplists/lists.js';
import { HooklogError } from '../../../platform/errors.js';

const lists = staticIpLists({
  anonymizers: ['198.51.100.0/24', '2001:db8:a::/48'],
  offices: ['192.0.2.10'],
});
const signIn = (ip: unknown, more: Record<string, unknown> = {}) => ({
  eventType: 'user.session.start',
  client: { ipAddress: ip },
  ...more,
});

describe('in list("name")', () => {
  it('parses to its own node, case-insensitive keywords, beside the other operators', () => {
    expect(parseFilter('client.ipAddress IN LIST("anonymizers")')).toEqual({
      op: 'inlist',
      path: 'client.ipAddress',
      list: 'anonymizers',
      at: 0,
    });
    const tree = parseFilter('eventType eq "x" and not (client.ipAddress in list("offices")) or a in list ( "b" )');
    expect(filterLists(tree)).toEqual(['offices', 'b']);
    // `in [..]` is unchanged.
    expect(parseFilter('a in ["x"]')).toMatchObject({ op: 'in', values: ['x'] });
  });

  it.each([
    ['client.ipAddress in list', '`list` needs a name'],
    ['client.ipAddress in list(anonymizers)', "list's name"],
    ['client.ipAddress in list("a"', 'missing )'],
    ['client.ipAddress in list("a", "b")', 'missing )'],
  ])('refuses %s, saying where', (expr, msg) => {
    let err: unknown;
    try {
      parseFilter(expr);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FilterSyntaxError);
    expect((err as Error).message).toContain(msg);
  });

  it('holds when the address is in the list: IPv4, IPv6, IPv4-mapped IPv6; never for a value that is no address', () => {
    const p = compileFilter('eventType eq "user.session.start" and client.ipAddress in list("anonymizers")', {
      lists,
    });
    const cases: Array<[unknown, boolean]> = [
      ['198.51.100.23', true],
      ['198.51.101.23', false],
      ['2001:db8:a:1::5', true],
      ['2001:DB8:B::5', false],
      ['::ffff:198.51.100.23', true],
      ['198.51.100', false],
      ['198.51.100.23.4', false],
      ['not an address', false],
      ['', false],
      [null, false],
      [19851100023, false],
    ];
    for (const [ip, want] of cases) expect([ip, p(signIn(ip))]).toEqual([ip, want]);
    expect(p({ eventType: 'user.session.start' })).toBe(false);
    expect(p(signIn('198.51.100.23', { eventType: 'user.session.end' }))).toBe(false);
    // not: an absent or malformed address is "not in the list".
    const outside = compileFilter('not (client.ipAddress in list("offices"))', { lists });
    expect([outside(signIn('192.0.2.10')), outside(signIn('192.0.2.11')), outside(signIn('garbage'))]).toEqual([
      false,
      true,
      true,
    ]);
  });

  it('reads any value of a multi-valued path (as every attribute operator does)', () => {
    const p = compileFilter('request.ipChain.ip in list("offices")', { lists });
    const ev = { request: { ipChain: [{ ip: '203.0.113.1' }, { ip: '192.0.2.10' }] } };
    expect(p(ev)).toBe(true);
    expect(p({ request: { ipChain: [{ ip: '203.0.113.1' }] } })).toBe(false);
  });

  it('a name no list has fails the rule at compile time, naming the configured ones', () => {
    let err: unknown;
    try {
      compileFilter('client.ipAddress in list("anonymisers")', { lists });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HooklogError);
    expect((err as HooklogError).code).toBe('CONFIG_INVALID');
    expect((err as Error).message).toContain('unknown IP list "anonymisers"');
    expect((err as Error).message).toContain('configured: anonymizers, offices');
    expect(() => compileFilter('client.ipAddress in list("x")')).toThrow(/configured: none; see enrichment.ip_lists/);
  });

  it('a search refuses it with a clear error (the lists are not in ClickHouse)', () => {
    let err: unknown;
    try {
      compileFilterSql('eventType eq "x" and client.ipAddress in list("anonymizers")');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FilterSyntaxError);
    expect((err as Error).message).toContain('searches cannot test IP lists yet');
    expect((err as FilterSyntaxError).offset).toBe(21);
  });
});
