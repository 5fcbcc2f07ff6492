/** The console's pure pieces: CSV neutralisation, the lifecycle, group grants, ranges and buckets, sign-in limits. */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../cli/config/load.js';
import { ApiKeyring, maySeeOrg } from '../platform/access.js';
import { refuseTransition } from './alert-states.js';
import { csvCell, toCsv } from './csv.js';
import { fillBuckets } from './entities.js';
import { safeReturnTo } from './http.js';
import { grantsFor, pkceChallenge } from './oidc.js';
import { bucketMinutes, parseRange } from './range.js';
import { AttemptLimiter } from './rate-limit.js';
import { consoleSchema } from './config.js';

describe('CSV export', () => {
  it('neutralises cells a spreadsheet would run as formulas, and quotes what needs it', () => {
    expect(csvCell('=1+1')).toBe("'=1+1");
    expect(csvCell('+SUM(A1)')).toBe("'+SUM(A1)");
    expect(csvCell('-2+3')).toBe("'-2+3");
    expect(csvCell('@cmd')).toBe("'@cmd");
    expect(csvCell('\t=x')).toBe("'⟨U+0009⟩=x");
    expect(csvCell('=HYPERLINK("a","b")')).toBe(`"'=HYPERLINK(""a"",""b"")"`);
    expect(csvCell('-5')).toBe('-5');
    expect(csvCell(-5)).toBe('-5');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell(null)).toBe('');
    expect(csvCell(['=x', 'y'])).toBe('"[""=x"",""y""]"');
    expect(toCsv(['a', 'b'], [{ a: '=1', b: 2 }])).toBe("a,b\r\n'=1,2\r\n");
  });
});

describe('alert lifecycle', () => {
  it('goes open → acknowledged → closed with a resolution, and reopens', () => {
    expect(refuseTransition('open', { action: 'acknowledge' })).toBeUndefined();
    expect(refuseTransition('acknowledged', { action: 'acknowledge' })).toMatch(/only an open alert/);
    expect(refuseTransition('acknowledged', { action: 'close' })).toMatch(/needs a resolution/);
    expect(refuseTransition('acknowledged', { action: 'close', resolution: 'benign' })).toBeUndefined();
    expect(refuseTransition('open', { action: 'close', resolution: 'true_positive' })).toBeUndefined();
    expect(refuseTransition('closed', { action: 'close', resolution: 'benign' })).toMatch(/already closed/);
    expect(refuseTransition('closed', { action: 'reopen' })).toBeUndefined();
    expect(refuseTransition('open', { action: 'reopen' })).toMatch(/already open/);
    expect(refuseTransition('closed', { action: 'assign', assignee: '' })).toBeUndefined();
    expect(refuseTransition('open', { action: 'comment' })).toMatch(/needs a note/);
  });
});

describe('access', () => {
  it('maps groups to the union of their orgs and the highest role; none grants nothing', () => {
    const grants = [
      { group: 'a', orgs: ['x'], role: 'viewer' as const },
      { group: 'b', orgs: ['y', 'x'], role: 'analyst' as const },
    ];
    expect(grantsFor(['a'], grants)).toEqual({ orgs: ['x'], role: 'viewer' });
    expect(grantsFor(['a', 'b', 'c'], grants)).toEqual({ orgs: ['x', 'y'], role: 'analyst' });
    expect(grantsFor(['c'], grants)).toBeUndefined();
  });

  it('keeps a bare API key meaning every org (read-only) and scopes an object key', () => {
    const ring = new ApiKeyring([
      'k'.repeat(24),
      { name: 'tool', secret: 's'.repeat(24), orgs: ['x'], role: 'analyst' },
    ]);
    const bare = ring.principalFor('k'.repeat(24))!;
    expect(bare).toMatchObject({ orgs: 'all', role: 'viewer' });
    expect(maySeeOrg(bare, 'anything')).toBe(true);
    const scoped = ring.principalFor('s'.repeat(24))!;
    expect([maySeeOrg(scoped, 'x'), maySeeOrg(scoped, 'y')]).toEqual([true, false]);
    expect(ring.principalFor('s'.repeat(23))).toBeUndefined();
    expect(ring.principalFor(undefined)).toBeUndefined();
  });

  it('returns only to console paths after sign-in', () => {
    expect(safeReturnTo('/console/users/a/b?x=1')).toBe('/console/users/a/b?x=1');
    for (const bad of ['https://evil.example/', '//evil.example/console', '/other', '/console\\@evil', undefined])
      expect(safeReturnTo(bad)).toBe('/console/');
  });

  it('derives the PKCE S256 challenge of RFC 7636, appendix B', () => {
    expect(pkceChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
  });

  it('limits sign-in attempts per address per minute', () => {
    const l = new AttemptLimiter(2, 2);
    expect(l.take('a', 0).allowed).toBe(true);
    expect(l.take('a', 1).allowed).toBe(true);
    expect(l.take('a', 2)).toEqual({ allowed: false, retryAfterS: 60 });
    expect(l.take('b', 3).allowed).toBe(true);
    expect(l.take('a', 60_000).allowed).toBe(true);
    // Bounded: a third address forgets the oldest.
    l.take('c', 60_001);
    expect(l.take('b', 60_002).allowed).toBe(true);
  });
});

describe('ranges', () => {
  it('defaults to the days before now, refuses a bad or inverted range, and picks buckets for about a hundred points', () => {
    const now = Date.parse('2026-01-10T00:00:00Z');
    expect(parseRange({}, now, 7)).toMatchObject({
      since: '2026-01-03 00:00:00.000',
      until: '2026-01-10 00:00:00.000',
    });
    expect(() => parseRange({ since: 'yesterday' }, now, 7)).toThrow(/since/);
    expect(() => parseRange({ since: '2026-01-10T00:00:00Z', until: '2026-01-09T00:00:00Z' }, now, 7)).toThrow(/until/);
    const week = parseRange({}, now, 7);
    expect(bucketMinutes(week)).toBe(180);
    const filled = fillBuckets([{ t: '2026-01-03 03:00:00', success: '2', failure: '1', other: '0' }], week, 180);
    expect(filled).toHaveLength(56);
    expect(filled[1]).toEqual({ t: '2026-01-03 03:00:00', success: '2', failure: '1', other: '0' });
    expect(filled[0]).toEqual({ t: '2026-01-03 00:00:00', success: '0', failure: '0', other: '0' });
  });
});

describe('console.public_url over plain HTTP', () => {
  const withConsole = (publicUrl: string) => () =>
    parseConfig(
      {
        console: {
          enabled: true,
          public_url: publicUrl,
          session_secret: 'console-session-secret-0123456789abcdef',
          oidc: { issuer: 'https://idp.example', client_id: 'c', grants: [{ group: 'g', orgs: ['o'] }] },
        },
      },
      {},
    );

  it('is taken on localhost and loopback addresses, where browsers keep Secure cookies over http, and with https', () => {
    for (const url of [
      'http://localhost:8080',
      'http://console.localhost',
      'http://127.0.0.1:8080',
      'http://127.8.9.10',
      'http://[::1]:8080',
      'https://hooklog.example.com',
      'https://10.0.0.5:8443',
    ])
      expect(withConsole(url)().console.public_url, url).toBe(url);
  });

  it('is refused on any other http:// host (no sign-in could finish), naming the key and what to do', () => {
    for (const url of [
      'http://hooklog.internal:8080',
      'http://10.0.0.5:8080',
      'http://[fd00::2]',
      'http://localhost.evil.example',
    ])
      expect(withConsole(url), url).toThrow(
        /config key "console\.public_url": plain http:\/\/ works only on localhost or a loopback address: browsers drop the console's Secure cookies .* Serve HTTPS/,
      );
    expect(withConsole('ftp://hooklog.example.com')).toThrow(/config key "console\.public_url": must be an https:\/\//);
  });
});

describe('console config', () => {
  const base = {
    enabled: true,
    public_url: 'https://hooklog.example.com',
    session_secret: 'x'.repeat(32),
    oidc: { issuer: 'https://example.okta.com', client_id: 'c', grants: [{ group: 'g', orgs: ['a'] }] },
  };
  it('asks for offline_access and re-checks groups every 15 minutes by default', () => {
    const c = consoleSchema.parse(base);
    expect(c.oidc?.scopes).toContain('offline_access');
    expect(c.regrant_minutes).toBe(15);
  });
  it('refuses scopes without offline_access, naming the regrant it is for', () => {
    const parsed = consoleSchema.safeParse({ ...base, oidc: { ...base.oidc, scopes: ['openid', 'groups'] } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]).toMatchObject({ path: ['oidc', 'scopes'] });
    expect(parsed.error?.issues[0]?.message).toMatch(/offline_access.*console\.regrant_minutes/);
  });
});
