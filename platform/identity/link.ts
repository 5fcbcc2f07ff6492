/**
 * RFC 8288 `Link` header parsing. The identity service pages with
 * `Link: <https://org/api/v1/logs?after=…>; rel="next"`, usually as two
 * headers (self, next) that fetch joins with ", ". The next URL is the only
 * position the pollers ever use, so it is taken exactly as given: never
 * decoded, rebuilt or re-encoded.
 */

/** One link: its target as written between `<` and `>`, and its parameters (names lower-cased). */
export interface Link {
  readonly url: string;
  readonly rels: readonly string[];
  readonly params: Readonly<Record<string, string>>;
}

/**
 * Parses every link of a (possibly joined) Link header. Tolerant: a malformed
 * link is skipped rather than failing the whole header, because a stray
 * extension link must not cost us the `next` one. Commas and semicolons inside
 * `<…>` or quoted strings do not split.
 */
export function parseLinkHeader(header: string | null | undefined): Link[] {
  if (!header) return [];
  const links: Link[] = [];
  let i = 0;
  const n = header.length;
  while (i < n) {
    const open = header.indexOf('<', i);
    if (open < 0) break;
    const close = header.indexOf('>', open + 1);
    if (close < 0) break;
    const url = header.slice(open + 1, close).trim();
    const params: Record<string, string> = {};
    i = close + 1;
    // Parameters: ; name[=value|"quoted value"] … up to the next top-level comma.
    for (;;) {
      while (i < n && (header[i] === ' ' || header[i] === '\t')) i++;
      if (i >= n || header[i] === ',') {
        i++;
        break;
      }
      if (header[i] !== ';') {
        // Garbage after the target: skip it, up to the next parameter or link.
        i = skipGarbage(header, i);
        continue;
      }
      i++;
      const nameStart = i;
      while (i < n && !'=;,'.includes(header[i]!)) i++;
      const name = header.slice(nameStart, i).trim().toLowerCase();
      let value = '';
      if (header[i] === '=') {
        i++;
        while (i < n && header[i] === ' ') i++;
        if (header[i] === '"') {
          i++;
          let v = '';
          while (i < n && header[i] !== '"') {
            if (header[i] === '\\' && i + 1 < n) i++;
            v += header[i];
            i++;
          }
          i++; // closing quote
          value = v;
        } else {
          const vStart = i;
          while (i < n && header[i] !== ';' && header[i] !== ',') i++;
          value = header.slice(vStart, i).trim();
        }
      }
      if (name && !(name in params)) params[name] = value;
    }
    if (url) links.push({ url, rels: (params.rel ?? '').toLowerCase().split(/\s+/).filter(Boolean), params });
  }
  return links;
}

function skipGarbage(s: string, from: number): number {
  let i = from;
  let quoted = false;
  while (i < s.length) {
    const c = s[i]!;
    if (c === '"') quoted = !quoted;
    else if ((c === ',' || c === ';') && !quoted) return i;
    i++;
  }
  return i;
}

/** The target of the first link with relation `rel` (case-insensitive), or null. */
export function findLink(header: string | null | undefined, rel: string): string | null {
  const want = rel.toLowerCase();
  return parseLinkHeader(header).find((l) => l.rels.includes(want))?.url ?? null;
}
