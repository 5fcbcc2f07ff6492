/**
 * The legacy Events poller's source: GET /api/v1/events into
 * `<prefix>.legacy-events` (its own topic and table: legacy event ids do not
 * map to System Log uuids, so the two never merge).
 */
import { describeIssues } from '../../schemas/logevent.js';
import type { PollSource } from '../poller/poller.js';
import { legacyEventFields } from './event.js';
import { LEGACY_EVENTS_PATH, LEGACY_PAGE_LIMIT, legacyFirstUrl } from './first-request.js';

export function legacyEventsSource(opts: {
  baseUrl: string;
  topic: string;
  startMs: (now: number) => number;
  filter?: string | undefined;
}): PollSource {
  return {
    name: 'legacy-events',
    path: LEGACY_EVENTS_PATH,
    topic: opts.topic,
    pageLimit: LEGACY_PAGE_LIMIT,
    feature: true,
    firstUrl: (now) => legacyFirstUrl(opts.baseUrl, { startMs: opts.startMs(now), now, filter: opts.filter }),
    check(item) {
      const r = legacyEventFields.safeParse(item);
      return r.success
        ? { ok: true, publishedMs: Date.parse(r.data.published) }
        : { ok: false, reason: describeIssues(r.error) };
    },
  };
}
