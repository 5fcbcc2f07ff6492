/**
 * The System Log poller's source: GET /api/v1/logs into `<prefix>.logs`, the
 * same topic event hooks write, so a polled copy and a pushed copy of one
 * event fold into one row by (org, uuid).
 */
import { checkLogEvent } from '../../schemas/logevent.js';
import type { PollSource } from '../poller/poller.js';
import { SYSTEM_LOG_PAGE_LIMIT, SYSTEM_LOG_PATH, systemLogFirstUrl } from './first-request.js';

export function systemLogSource(opts: {
  baseUrl: string;
  topic: string;
  startMs: (now: number) => number;
}): PollSource {
  return {
    name: 'system-log',
    path: SYSTEM_LOG_PATH,
    topic: opts.topic,
    pageLimit: SYSTEM_LOG_PAGE_LIMIT,
    feature: false,
    firstUrl: (now) => systemLogFirstUrl(opts.baseUrl, { startMs: opts.startMs(now), now }),
    check(item) {
      const r = checkLogEvent(item);
      return r.ok ? { ok: true, publishedMs: Date.parse(r.published) } : r;
    },
  };
}
