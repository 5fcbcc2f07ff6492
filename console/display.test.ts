/** The console's display of attacker-chosen values (display.ts): drawn visibly, bounded, exact, linked by reference. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { csvCell } from './csv.js';
import {
  fromVisible,
  isRef,
  keyTarget,
  label,
  linkValue,
  MAX_LINKED,
  MAX_SHOWN,
  pieces,
  sha256Hex,
  shown,
  text,
  visible,
} from './display.js';
import { offeredActions } from './lifecycle.js';
import { arrayHas, valueIs } from './value-ref.js';

describe('visible', () => {
  it('draws bidi overrides, zero-width characters, controls and NUL instead of obeying them', () => {
    expect(visible('rtl\u202Emoc.elpmaxe-a@nimda')).toBe('rtl⟨U+202E⟩moc.elpmaxe-a@nimda');
    expect(visible('\u202Eecnarf')).toBe('⟨U+202E⟩ecnarf');
    expect(visible('nul\u0000user')).toBe('nul⟨U+0000⟩user');
    expect(visible('a\u200Bb\u200Dc\uFEFFd\u2066e\u2069')).toBe('a⟨U+200B⟩b⟨U+200D⟩c⟨U+FEFF⟩d⟨U+2066⟩e⟨U+2069⟩');
    expect(visible('line\nbreak\ttab\r\u0085\u2028')).toBe('line⟨U+000A⟩break⟨U+0009⟩tab⟨U+000D⟩⟨U+0085⟩⟨U+2028⟩');
    expect(visible('tag\u{E0041}')).toBe('tag⟨U+E0041⟩');
    expect(visible('lone\uD800 pair😀')).toBe('lone⟨U+D800⟩ pair😀');
    expect(visible('plain text, accents é and CJK 漢字')).toBe('plain text, accents é and CJK 漢字');
  });

  it('is exact: ⟨ is drawn too, so fromVisible gives back every value', () => {
    const values = [
      'rtl\u202Emoc.elpmaxe-a@nimda',
      'a literal ⟨U+202E⟩ in the value',
      '\u0000\u0001\u007F\u009F',
      'lone \uDC00 and \uD83D halves',
      '😀 \u{E0001}',
      '',
    ];
    for (const v of values) expect(fromVisible(visible(v))).toBe(v);
    expect(visible('⟨U+0041⟩')).toBe('⟨U+27E8⟩U+0041⟩');
  });
});

describe('shown', () => {
  it('bounds a value to MAX_SHOWN characters and says it is clipped, with its whole length', () => {
    const long = 'x'.repeat(100_000);
    expect(shown(long)).toEqual({ text: 'x'.repeat(MAX_SHOWN), clipped: true, length: 100_000 });
    expect(shown('short')).toEqual({ text: 'short', clipped: false, length: 5 });
    expect(label(long, 10)).toBe(`${'x'.repeat(10)}…`);
  });

  it('counts the drawn marks and never cuts inside a mark or a surrogate pair', () => {
    const s = shown(`${'a'.repeat(MAX_SHOWN - 3)}\u202Etail`);
    expect(s.text).toBe('a'.repeat(MAX_SHOWN - 3));
    expect(s.clipped).toBe(true);
    const emoji = shown('😀'.repeat(MAX_SHOWN), 5);
    expect(emoji.text).toBe('😀😀');
    expect(shown('\u202E'.repeat(100), 20).text).toBe('⟨U+202E⟩⟨U+202E⟩');
  });

  it('costs the same for a 1 MB value as for a short one', () => {
    const huge = 'y'.repeat(1_000_000);
    const started = performance.now();
    for (let i = 0; i < 1000; i++) shown(huge);
    // Whole-value work would be ~1 s per call here; a prefix is microseconds.
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('shows arrays joined, objects as JSON, null as nothing', () => {
    expect(text(['a', 'b'])).toBe('a, b');
    expect(text({ k: 1 })).toBe('{"k":1}');
    expect(text(null)).toBe('');
    expect(shown(['a\u202E']).text).toBe('a⟨U+202E⟩');
  });
});

describe('pieces', () => {
  it('cuts a visible text into pieces that join back to it, never inside a mark or a surrogate pair', () => {
    const s = visible(`${'a'.repeat(1998)}\u202E${'😀'.repeat(3000)}tail`);
    const parts = pieces(s);
    expect(parts.join('')).toBe(s);
    expect(parts[0]).toBe('a'.repeat(1998));
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(2000);
      expect(p.charCodeAt(p.length - 1) >= 0xd800 && p.charCodeAt(p.length - 1) <= 0xdbff, p.slice(-4)).toBe(false);
      expect((p.match(/⟨/g) ?? []).length).toBe((p.match(/⟩/g) ?? []).length);
    }
    expect(pieces('')).toEqual([]);
    expect(pieces('x'.repeat(4001)).map((p) => p.length)).toEqual([2000, 2000, 1]);
  });
});

describe('links by reference', () => {
  it('links a long value (or one that looks like a reference) by the SHA-256 of its UTF-8 bytes', () => {
    const long = `long-${'x'.repeat(100_000)}@a.example`;
    const hex = createHash('sha256').update(long, 'utf8').digest('hex');
    expect(linkValue(long)).toBe(`sha256:${hex}`);
    expect(linkValue('frank@a.example')).toBe('frank@a.example');
    expect(linkValue('x'.repeat(MAX_LINKED))).toBe('x'.repeat(MAX_LINKED));
    const lookalike = `sha256:${'0'.repeat(64)}`;
    expect(isRef(lookalike)).toBe(true);
    expect(linkValue(lookalike)).toBe(`sha256:${createHash('sha256').update(lookalike).digest('hex')}`);
  });

  it('hashes as node:crypto does, across block boundaries and non-ASCII text', () => {
    for (const s of ['', 'abc', 'a'.repeat(55), 'a'.repeat(56), 'a'.repeat(64), 'a\u202Eb😀\u0000', 'é'.repeat(1000)])
      expect(sha256Hex(s), s.slice(0, 20)).toBe(createHash('sha256').update(s, 'utf8').digest('hex'));
  });

  it('matches a reference by the hash of the column, a plain value by the value', () => {
    const ref = `sha256:${'a'.repeat(64)}`;
    expect(valueIs('actor_alternate_id', 'user', ref)).toEqual({
      sql: 'lower(hex(SHA256(actor_alternate_id))) = {user:String}',
      param: 'a'.repeat(64),
    });
    expect(valueIs('actor_alternate_id', 'user', 'frank')).toEqual({
      sql: 'actor_alternate_id = {user:String}',
      param: 'frank',
    });
    expect(arrayHas('targets', 't', ref).sql).toBe('arrayExists(x -> lower(hex(SHA256(x))) = {t:String}, targets)');
    expect(arrayHas('targets', 't', 'v')).toEqual({ sql: 'has(targets, {t:String})', param: 'v' });
  });
});

describe('CSV cells', () => {
  it('keep formula neutralisation and draw invisible characters', () => {
    expect(csvCell('rtl\u202Emoc.elpmaxe-a@nimda')).toBe('rtl⟨U+202E⟩moc.elpmaxe-a@nimda');
    expect(csvCell('\u202Eecnarf')).toBe('⟨U+202E⟩ecnarf');
    expect(csvCell('nul\u0000')).toBe('nul⟨U+0000⟩');
    expect(csvCell('\t=x')).toBe("'⟨U+0009⟩=x");
    expect(csvCell('=1+1\u202E')).toBe("'=1+1⟨U+202E⟩");
    expect(csvCell('a\r\nb,c')).toBe('"a⟨U+000D⟩⟨U+000A⟩b,c"');
  });
});

describe('offered actions', () => {
  it('offers only what every selected alert can take', () => {
    expect(offeredActions(['open'])).toEqual(['acknowledge', 'close', 'assign', 'comment']);
    expect(offeredActions(['acknowledged'])).toEqual(['close', 'reopen', 'assign', 'comment']);
    expect(offeredActions(['closed'])).toEqual(['reopen', 'assign', 'comment']);
    expect(offeredActions(['open', 'closed'])).toEqual(['assign', 'comment']);
    expect(offeredActions([])).toEqual(['acknowledge', 'close', 'reopen', 'assign', 'comment']);
  });
});

describe('alert keys as links', () => {
  it("links a key's value to its user or IP page by the rule's group-by field, else by its shape", () => {
    expect(keyTarget('actor.alternateId', 'frank@a.example')).toBe('user');
    expect(keyTarget('target.alternateId', 'x')).toBe('user');
    expect(keyTarget('client.ipAddress', '203.0.113.7')).toBe('ip');
    expect(keyTarget('client_ip', '2001:db8::1')).toBe('ip');
    // A field that is neither: shown, not linked (a country is not a user because it has no @).
    expect(keyTarget('client.geographicalContext.country', 'France')).toBe('value');
    expect(keyTarget('eventType', '203.0.113.7')).toBe('value');
    // A rule this process does not know: by shape.
    expect(keyTarget(undefined, '198.51.100.9')).toBe('ip');
    expect(keyTarget(undefined, '2001:db8::1')).toBe('ip');
    expect(keyTarget(undefined, 'rtl\u202Emoc.elpmaxe-a@nimda')).toBe('user');
    expect(keyTarget(undefined, 'France')).toBe('value');
  });
});
