/**
 * Writes small MaxMind DB (MMDB) files for tests, following the MaxMind DB File Format Specification 2.0:
 * a binary search tree over the address bits (32-bit records, an IPv6 tree with IPv4 under ::/96, as MaxMind's
 * own databases have it), a 16-byte zero separator, the data section, then the metadata marker and map.
 *
 * Why here and not a package: no maintained MMDB writer exists for Node (MaxMind ships writers for Go and Perl
 * only); the format is small and fully specified, and the reader the product uses (mmdb-lib) reads what this
 * writes, so a test proves the product against the reader it runs, on databases made to each test's need.
 */
import { isIPv4 } from 'node:net';

type Value = string | number | boolean | { readonly u32: number } | readonly Value[] | { readonly [k: string]: Value };

export interface MmdbNetwork {
  /** `198.51.100.0/24`, `203.0.113.7/32`, `2001:db8::/32`. */
  readonly cidr: string;
  readonly data: { readonly [k: string]: Value };
}

const MARKER = Buffer.from([0xab, 0xcd, 0xef, ...Buffer.from('MaxMind.com')]);

function control(type: number, size: number): Buffer {
  const ext = type > 7;
  const first = (ext ? 0 : type << 5) & 0xe0;
  const extra = ext ? [type - 7] : [];
  if (size < 29) return Buffer.from([first | size, ...extra]);
  if (size < 285) return Buffer.from([first | 29, ...extra, size - 29]);
  if (size < 65821) {
    const s = size - 285;
    return Buffer.from([first | 30, ...extra, s >> 8, s & 0xff]);
  }
  const s = size - 65821;
  return Buffer.from([first | 31, ...extra, s >> 16, (s >> 8) & 0xff, s & 0xff]);
}

function uint(type: number, n: number): Buffer {
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return Buffer.concat([control(type, bytes.length), Buffer.from(bytes)]);
}

/** One value in the data section's encoding: integers are uint32 (`{u32}` forces it), other numbers doubles. */
export function encodeValue(v: Value): Buffer {
  if (typeof v === 'string') {
    const b = Buffer.from(v, 'utf8');
    return Buffer.concat([control(2, b.length), b]);
  }
  if (typeof v === 'boolean') return control(14, v ? 1 : 0);
  if (typeof v === 'number') {
    if (Number.isInteger(v) && v >= 0 && v <= 0xffffffff) return uint(6, v);
    const b = Buffer.alloc(8);
    b.writeDoubleBE(v);
    return Buffer.concat([control(3, 8), b]);
  }
  if (Array.isArray(v)) return Buffer.concat([control(11, v.length), ...v.map(encodeValue)]);
  if ('u32' in v && typeof v.u32 === 'number') return uint(6, v.u32);
  const entries = Object.entries(v as Record<string, Value>);
  return Buffer.concat([control(7, entries.length), ...entries.flatMap(([k, x]) => [encodeValue(k), encodeValue(x)])]);
}

/** An address's 128 bits (IPv4 under ::/96), most significant first. */
function bits(address: string): number[] {
  let bytes: number[];
  if (isIPv4(address)) bytes = [...new Array<number>(12).fill(0), ...address.split('.').map(Number)];
  else {
    const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
    const h = head ? head.split(':') : [];
    const t = tail ? tail.split(':') : [];
    const groups = tail === undefined ? h : [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
    bytes = groups.flatMap((g) => {
      const n = parseInt(g, 16);
      return [n >> 8, n & 0xff];
    });
  }
  return bytes.flatMap((b) => [7, 6, 5, 4, 3, 2, 1, 0].map((i) => (b >> i) & 1));
}

type Rec = { node: number } | { data: number } | null;

/** An MMDB file holding `networks` (later ones win where they overlap), of `databaseType`. */
export function writeMmdb(databaseType: string, networks: readonly MmdbNetwork[]): Buffer {
  const nodes: [Rec, Rec][] = [[null, null]];
  const data: Buffer[] = [];
  let dataLen = 0;
  for (const n of networks) {
    const [addr, len] = n.cidr.split('/');
    const v4 = isIPv4(addr!);
    const prefix = (len === undefined ? (v4 ? 32 : 128) : Number(len)) + (v4 ? 96 : 0);
    const encoded = encodeValue(n.data);
    const offset = dataLen;
    data.push(encoded);
    dataLen += encoded.length;
    const b = bits(addr!);
    let at = 0;
    for (let i = 0; i < prefix - 1; i++) {
      const r = nodes[at]![b[i]!];
      if (r && 'node' in r) at = r.node;
      else {
        nodes.push([r ?? null, r ?? null]); // A network inside a larger one: the rest of the larger one keeps its data.
        nodes[at]![b[i]!] = { node: nodes.length - 1 };
        at = nodes.length - 1;
      }
    }
    nodes[at]![b[prefix - 1]!] = { data: offset };
  }
  const count = nodes.length;
  const tree = Buffer.alloc(count * 8);
  nodes.forEach(([l, r], i) => {
    const val = (x: Rec) => (x === null ? count : 'node' in x ? x.node : count + 16 + x.data);
    tree.writeUInt32BE(val(l), i * 8);
    tree.writeUInt32BE(val(r), i * 8 + 4);
  });
  const metadata = encodeValue({
    node_count: { u32: count },
    record_size: { u32: 32 },
    ip_version: { u32: 6 },
    database_type: databaseType,
    languages: ['en'],
    binary_format_major_version: { u32: 2 },
    binary_format_minor_version: { u32: 0 },
    build_epoch: { u32: 1_700_000_000 },
    description: { en: `hooklog test ${databaseType}` },
  });
  return Buffer.concat([tree, Buffer.alloc(16), ...data, MARKER, metadata]);
}

/** A City database record as MaxMind's GeoLite2-City (and DB-IP's lite City) lays it out. */
export function cityRecord(country: string, city: string, lat: number, lon: number): MmdbNetwork['data'] {
  return {
    city: { names: { en: city } },
    country: { iso_code: country, names: { en: country } },
    location: { latitude: lat, longitude: lon },
  };
}

/** An ASN database record (GeoLite2-ASN, DB-IP ASN lite). */
export function asnRecord(number: number, organization: string): MmdbNetwork['data'] {
  return { autonomous_system_number: number, autonomous_system_organization: organization };
}
