/**
 * The third-party corpora (sample events, hook requests, Sigma rules, Panther
 * cases, the vendor's detection catalogue) for the conformance suite only:
 * `*.corpora.test.ts`, run by `npm run test:corpora`. They are not part of
 * the repository; HOOKLOG_CORPORA_DIR names them (default ../shared/corpora
 * beside the repo). `npm test` never reads them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join, resolve } from 'node:path';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const CORPORA_DIR = resolve(REPO, process.env.HOOKLOG_CORPORA_DIR ?? join('..', 'shared', 'corpora'));

/** Throws a clear error when the corpora are not there: the conformance suite must not pass by reading nothing. */
export function requireCorpora(): string {
  if (!existsSync(CORPORA_DIR)) {
    throw new Error(
      `The conformance suite needs the third-party corpora, and ${CORPORA_DIR} does not exist. ` +
        'Set HOOKLOG_CORPORA_DIR to the corpora directory (default ../shared/corpora beside the repo). ' +
        '`npm test` runs everything else without them.',
    );
  }
  return CORPORA_DIR;
}

export function readJsonl<T = Record<string, unknown>>(relative: string): T[] {
  return readFileSync(join(requireCorpora(), relative), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

/** The 127 corpus events the service itself would send: real uuid, ISO published, eventType, unique uuids. */
export function validLogEvents(): Array<Record<string, unknown> & { uuid: string }> {
  return readJsonl('logevents.valid.jsonl');
}

export { delivery } from '../fixtures/index.js';
