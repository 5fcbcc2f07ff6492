import { describe, expect, it } from 'vitest';
import { findLink, parseLinkHeader } from './link.js';
import { resolveNext } from './client.js';

describe('parseLinkHeader', () => {
  it('reads self and next from the joined headers the service sends, targets byte for byte', () => {
    const next =
      'https://acme.okta.com/api/v1/logs?limit=1000&after=1661884012345_1&filter=eventType%20eq%20%22a%2Cb%22';
    const h = `<https://acme.okta.com/api/v1/logs?limit=1000&since=2026-01-01T00%3A00%3A00.000Z>; rel="self", <${next}>; rel="next"`;
    expect(parseLinkHeader(h).map((l) => l.rels)).toEqual([['self'], ['next']]);
    expect(findLink(h, 'next')).toBe(next);
    expect(findLink(h, 'NEXT')).toBe(next);
  });

  it('keeps commas and semicolons inside the target, takes unquoted and multi-valued rels', () => {
    const h = '<https://x/a?b=1,2;c>; rel=next; title="a, b; c", <https://x/s>; rel="self alternate"';
    const links = parseLinkHeader(h);
    expect(links[0]).toEqual({ url: 'https://x/a?b=1,2;c', rels: ['next'], params: { rel: 'next', title: 'a, b; c' } });
    expect(links[1]!.rels).toEqual(['self', 'alternate']);
  });

  it('skips garbage without losing the next link, and answers null when there is none', () => {
    expect(findLink('garbage, <https://x/n>; rel="next"', 'next')).toBe('https://x/n');
    expect(findLink('<https://x/s>; junk; rel="self", <https://x/n> trailing; rel="next"', 'next')).toBe('https://x/n');
    expect(findLink('<https://x/s>; rel="self"', 'next')).toBeNull();
    expect(findLink('', 'next')).toBeNull();
    expect(findLink(null, 'next')).toBeNull();
    expect(findLink('<https://x/unterminated; rel="next"', 'next')).toBeNull();
  });

  it('resolves a relative next link against the page URL and leaves absolute ones untouched', () => {
    expect(resolveNext('/api/v1/logs?after=1_2', 'https://acme.okta.com/api/v1/logs?since=x')).toBe(
      'https://acme.okta.com/api/v1/logs?after=1_2',
    );
    const odd = 'https://acme.okta.com/api/v1/logs?after=a%2fb&x=%7E';
    expect(resolveNext(odd, 'https://other/')).toBe(odd);
    expect(resolveNext(null, 'https://x/')).toBeNull();
  });
});
