/**
 * Conformance over the published token inline hook samples (npm run test:corpora): every request
 * goes through the real answer path, and every published answer passes the per-answer protocol check.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORPORA_DIR } from '../../test/support/corpus.js';
import { checkAnswer } from './answer.js';
import { accessPatch, idPatch, type LooseJson, tokenHookHarness } from './testing.js';

const { hookWith, answer } = tokenHookHarness('token-corpora');
const both = { id: true, access: true };

/** The corpus's token inline hook requests, by file name. */
function corpusTokenRequests(): Map<string, Record<string, unknown>> {
  const dir = join(CORPORA_DIR, 'hooks');
  const files = readdirSync(dir)
    .filter((f) => f.startsWith('request__com.okta.oauth2.tokens.transform__'))
    .sort();
  return new Map(files.map((f) => [f, JSON.parse(readFileSync(join(dir, f), 'utf8')) as Record<string, unknown>]));
}

/** The corpus's token hook answers (identity and access patches), by file name. */
function corpusTokenAnswers(): Map<string, unknown> {
  const dir = join(CORPORA_DIR, 'hooks');
  const files = readdirSync(dir)
    .filter((f) => /^response__com\.okta\.(identity|access)\.patch__/.test(f))
    .sort();
  return new Map(files.map((f) => [f, JSON.parse(readFileSync(join(dir, f), 'utf8')) as unknown]));
}

describe('requests as the service sends them', () => {
  it('answers every corpus request: both tokens patched, the answer passing the protocol check', async () => {
    const hook = await hookWith([
      { name: 'tag', actions: [{ add: { tokens: 'both', claim: 'tagged', template: '{{user.id}}' } }] },
    ]);
    const requests = corpusTokenRequests();
    expect(requests.size).toBe(12);
    let answered = 0;
    for (const [file, req] of requests) {
      const a = answer(hook, req);
      if (file.includes('8566bbdeca')) {
        // The spec's own example puts context/identity/access beside a null data: not a request.
        expect(a).toEqual({ status: 400, json: { error: 'data is missing' } });
        continue;
      }
      const userId = (req as LooseJson).data.context.user.id as string;
      expect(a).toEqual({
        status: 200,
        json: {
          commands: [
            idPatch({ op: 'add', path: '/claims/tagged', value: userId }),
            accessPatch({ op: 'add', path: '/claims/tagged', value: userId }),
          ],
        },
      });
      expect(checkAnswer(a.json, both)).toBeUndefined();
      answered++;
    }
    expect(answered).toBe(11);
  });
});

describe('the per-answer protocol check', () => {
  it('passes every corpus answer, and refuses those with an access patch for an ID-token-only request', () => {
    const answers = corpusTokenAnswers();
    expect(answers.size).toBe(17);
    for (const [file, a] of answers) {
      expect(checkAnswer(a, both), file).toBeUndefined();
      const patchesAccess = JSON.stringify(a).includes('com.okta.access.patch');
      expect(checkAnswer(a, { id: true, access: false }) !== undefined, file).toBe(patchesAccess);
    }
  });
});
