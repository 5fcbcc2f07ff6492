import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

/** ../shared next to the repo; CI clones main with shared/ beside it. */
export const SHARED_DIR = process.env.HOOKLOG_SHARED_DIR ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'shared');
export const CORPORA_DIR = join(SHARED_DIR, 'corpora');

export function readJsonl<T = Record<string, unknown>>(relative: string): T[] {
  return readFileSync(join(CORPORA_DIR, relative), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

/** The 127 corpus events the service itself would send: real uuid, ISO published, eventType, unique uuids. */
export function validLogEvents(): Array<Record<string, unknown> & { uuid: string }> {
  return readJsonl('logevents.valid.jsonl');
}

/** An event hook delivery envelope as the service sends it (protocols.md §1). */
export function delivery(org: string, hookId: string, events: readonly unknown[], eventId: string = crypto.randomUUID()) {
  return {
    eventType: 'com.okta.event_hook',
    eventTypeVersion: '1.0',
    cloudEventsVersion: '0.1',
    source: `https://${org}.example.com/api/v1/eventHooks/${hookId}`,
    eventId,
    eventTime: new Date().toISOString(),
    contentType: 'application/json',
    data: { events },
  };
}
