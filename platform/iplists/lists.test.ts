/**
 * Named IP lists from files: what a file may hold, membership (IPv4, IPv6, IPv4-mapped IPv6, text that is no
 * address), and reloading: a changed file is re-read, a bad one keeps the last good list and is counted.
 */
import { mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HooklogError } from '../errors.js';
import { IpLists, parseIpList, staticIpLists } from './lists.js';

const dir = mkdtempSync(join(tmpdir(), 'hooklog-iplists-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Polls `cond` until it holds; fails naming what it last saw. */
async function until(what: string, cond: () => boolean, seen: () => unknown, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms; last saw ${JSON.stringify(seen())}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a list file', () => {
  it('holds CIDR ranges and addresses, IPv4 and IPv6, with comments and blank lines', () => {
    const l = staticIpLists({
      anonymizers: ['# exit nodes', '198.51.100.0/24', '', '203.0.113.7  # one host', '2001:db8:100::/48'],
    });
    expect(l.has('anonymizers')).toBe(true);
    expect(l.has('offices')).toBe(false);
    const yes = ['198.51.100.0', '198.51.100.255', '203.0.113.7', '2001:db8:100::1', '2001:DB8:100:ffff::9'];
    const no = ['198.51.101.1', '203.0.113.8', '2001:db8:101::1', '10.0.0.1', '::1'];
    for (const a of yes) expect([a, l.contains('anonymizers', a)]).toEqual([a, true]);
    for (const a of no) expect([a, l.contains('anonymizers', a)]).toEqual([a, false]);
  });

  it('matches an IPv4-mapped IPv6 address against IPv4 ranges', () => {
    const l = staticIpLists({ v4: ['198.51.100.0/24'] });
    expect(l.contains('v4', '::ffff:198.51.100.9')).toBe(true);
    expect(l.contains('v4', '::ffff:c633:6409')).toBe(true);
    expect(l.contains('v4', '::ffff:198.51.101.9')).toBe(false);
  });

  it('a value that is no address is in no list, and an unknown list holds nothing', () => {
    const l = staticIpLists({ all: ['0.0.0.0/0', '::/0'] });
    for (const v of [
      '',
      'example.com',
      '198.51.100',
      '198.51.100.1/24',
      '1.2.3.4 ',
      ' 1.2.3.4',
      '1.2.3.4\n',
      42,
      null,
      {},
    ])
      expect([v, l.contains('all', v)]).toEqual([v, false]);
    expect(l.contains('all', '1.2.3.4')).toBe(true);
    expect(l.contains('nope', '1.2.3.4')).toBe(false);
  });

  it('refuses a bad line, naming the file and line', () => {
    for (const bad of ['198.51.100.0/33', '2001:db8::/129', '198.51.100.0/', 'example.com', '1.2.3.4/x', '300.1.1.1']) {
      let err: unknown;
      try {
        parseIpList(`# ok\n10.0.0.0/8\n${bad}\n`, 'f.txt');
      } catch (e) {
        err = e;
      }
      expect(err, bad).toBeInstanceOf(HooklogError);
      expect((err as HooklogError).code).toBe('CONFIG_INVALID');
      expect((err as Error).message).toContain('f.txt:3:');
    }
  });
});

describe('lists from files', () => {
  it('fail at start when a file does not load (there is no last good list)', () => {
    const path = join(dir, 'bad-at-start.txt');
    writeFileSync(path, 'not an address\n');
    expect(() => new IpLists({ ip_lists: [{ name: 'x', path }], reload_interval_ms: 100 })).toThrow(
      /bad-at-start.txt:1/,
    );
    expect(
      () => new IpLists({ ip_lists: [{ name: 'x', path: join(dir, 'absent.txt') }], reload_interval_ms: 100 }),
    ).toThrow(/cannot read/);
  });

  it('are re-read when the file changes; a bad version keeps the last good list and is counted once', async () => {
    const path = join(dir, 'offices.txt');
    writeFileSync(path, '192.0.2.0/24\n');
    const errors: string[] = [];
    const reloads: string[] = [];
    const lists = new IpLists(
      { ip_lists: [{ name: 'offices', path }], reload_interval_ms: 100 },
      { onError: (n, e) => errors.push(`${n}: ${e.message}`), onReload: (n) => reloads.push(n) },
    );
    lists.start();
    try {
      expect(lists.contains('offices', '192.0.2.5')).toBe(true);
      expect(lists.contains('offices', '2001:db8::5')).toBe(false);
      // A new version (a different size, and a later mtime for file systems with coarse stamps).
      writeFileSync(path, '# moved\n2001:db8::/32\n');
      utimesSync(path, new Date(), new Date(Date.now() + 2000));
      await until(
        'the new version is used',
        () => lists.contains('offices', '2001:db8::5'),
        () => ({ reloads, errors }),
      );
      expect(lists.contains('offices', '192.0.2.5')).toBe(false);
      // A broken version: the last good list stays.
      writeFileSync(path, '2001:db8::/32\nnonsense here\n');
      utimesSync(path, new Date(), new Date(Date.now() + 4000));
      await until(
        'the bad version is reported',
        () => errors.length > 0,
        () => ({ reloads, errors }),
      );
      expect(errors[0]).toContain('offices.txt:2');
      expect(lists.contains('offices', '2001:db8::5')).toBe(true);
      expect(lists.reloadErrors.get('offices')).toBe(1);
      // Polls go on, the same bad version is not counted again.
      const reloadsBefore = reloads.length;
      lists.refresh();
      lists.refresh();
      expect(lists.reloadErrors.get('offices')).toBe(1);
      // A deleted file keeps the list too.
      unlinkSync(path);
      lists.refresh();
      expect(lists.reloadErrors.get('offices')).toBe(2);
      expect(lists.contains('offices', '2001:db8::5')).toBe(true);
      // A fixed version is used again.
      writeFileSync(path, '198.51.100.0/24\n');
      await until(
        'the fixed version is used',
        () => lists.contains('offices', '198.51.100.1'),
        () => ({ reloads, errors }),
      );
      expect(reloads.length).toBe(reloadsBefore + 1);
    } finally {
      lists.stop();
    }
  });
});
