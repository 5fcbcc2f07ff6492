/**
 * Seeded corruption of JSON bytes, for the tests that hold a byte-level JSON reader (the sink's event scan,
 * the event hooks' delivery scan) to JSON.parse: 1–3 edits, each deleting a byte, inserting JSON punctuation,
 * overwriting a byte (punctuation, a stray UTF-8 byte or a control character) or cutting the rest off.
 * `rand` is the test's seeded generator, so a failing case is reproducible.
 */
const PUNCTUATION = [...Buffer.from('{}[]",:\\ntfe-.0123456789 \t\r\nu\'')];
const OVERWRITES = [...PUNCTUATION, 0x80, 0xff, 0x00, 0x1f];

export function corrupted(bytes: Buffer, rand: () => number): Buffer {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  let out = bytes;
  const edits = 1 + Math.floor(rand() * 3);
  for (let j = 0; j < edits; j++) {
    const at = Math.floor(rand() * out.length);
    const r = rand();
    if (r < 0.3) out = Buffer.concat([out.subarray(0, at), out.subarray(at + 1)]);
    else if (r < 0.6) out = Buffer.concat([out.subarray(0, at), Buffer.of(pick(PUNCTUATION)), out.subarray(at)]);
    else if (r < 0.8) {
      out = Buffer.from(out);
      out[at] = pick(OVERWRITES);
    } else out = out.subarray(0, at);
  }
  return out;
}
