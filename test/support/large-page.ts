/**
 * A System Log page as large as real ones get, for tests of the stream's size
 * limits. Real events grow past the samples' 2 KiB with the same few fields:
 * long authorize request URIs (state and nonce tokens), debug data (request
 * ids, hashes) and target lists (a group rule touching many groups). Those are
 * mostly random ids, which compress about 1.3 times, not 10 times like the rest
 * of an event's JSON: the padding is random (seeded) for that reason.
 */
import { randomUUID } from 'node:crypto';
import { seededRandom } from './random.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * `count` events as the raw JSON the service would send, taken in turn from `samples` with the largest
 * first, each with a fresh uuid and padded to about `eventBytes` (the samples are kept as they are when
 * already larger).
 */
export function largePage(
  samples: ReadonlyArray<Record<string, unknown>>,
  opts: { count?: number; eventBytes?: number; seed?: number } = {},
): string[] {
  const { count = 1_000, eventBytes = 8 * 1024, seed = 15 } = opts;
  const random = seededRandom(seed);
  const id = (prefix: string, n: number) =>
    prefix + Array.from({ length: n }, () => BASE62[Math.floor(random() * 62)]).join('');
  const largest = [...samples].sort((a, b) => JSON.stringify(b).length - JSON.stringify(a).length);
  return Array.from({ length: count }, (_, i) => {
    const sample = largest[i % largest.length]!;
    const debugContext = (sample.debugContext ?? {}) as { debugData?: Record<string, unknown> };
    const event: Record<string, unknown> = {
      ...sample,
      uuid: randomUUID(),
      debugContext: {
        ...debugContext,
        debugData: {
          ...debugContext.debugData,
          requestId: id('', 27),
          dtHash: Array.from({ length: 64 }, () => '0123456789abcdef'[Math.floor(random() * 16)]).join(''),
          requestUri:
            `/oauth2/v1/authorize?client_id=${id('0oa', 17)}&response_type=code&scope=openid+profile+email` +
            `&state=${id('', 43)}&nonce=${id('', 43)}&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback`,
        },
      },
      target: Array.isArray(sample.target) ? [...(sample.target as unknown[])] : [],
    };
    const targets = event.target as unknown[];
    // The event's length as JSON, kept as targets are added (a target adds its own JSON and, after the first,
    // a comma) rather than serialising the whole event again for each: that was some 15 s a page on a loaded CI.
    let length = JSON.stringify(event).length;
    while (length < eventBytes) {
      const target = {
        id: id('00g', 17),
        type: 'UserGroup',
        alternateId: 'unknown',
        displayName: `app-${id('', 10)}-users`,
        detailEntry: null,
      };
      length += JSON.stringify(target).length + (targets.length > 0 ? 1 : 0);
      targets.push(target);
    }
    return JSON.stringify(event);
  });
}
