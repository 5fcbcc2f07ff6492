/**
 * Conformance, continued: claim paths (nesting, JSON Pointer escaping) and
 * the check every answer passes before it leaves — run over
 * hand-made unsafe answers (the corpus's in token-hook.corpora.test.ts), and through the error policy when a
 * real answer fails it (protocols.md §2).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { answerBody, checkAnswer, renderAnswer } from './answer.js';
import { BuiltOp, type OpShape, type PatchOp } from './actions.js';
import { parsePatchPath } from './pointer.js';
import { RESERVED_CLAIMS } from './protocol.js';
import { accessPatch, idPatch, sampleRequest, tokenHookHarness } from './testing.js';

const { hookWith, answer, dir } = tokenHookHarness('token-answer');
const both = { id: true, access: true };

describe('claim paths', () => {
  it('nests, indexes, appends and escapes URI-like names as JSON Pointer (~0, ~1)', async () => {
    const hook = await hookWith([
      {
        name: 'paths',
        actions: [
          { add: { tokens: 'id', claim: 'employee_profile', path: ['department_id'], value: '4947' } },
          { add: { tokens: 'id', claim: 'preferred_airports', path: [3], value: 'lax' } },
          { add: { tokens: 'id', claim: 'preferred_airports', path: ['-'], value: 'sfo' } },
          { remove: { tokens: 'id', claim: 'preferred_airports', path: [1] } },
          { add: { tokens: 'access', claim: 'https://example.com/roles', value: ['a'] } },
          { replace: { tokens: 'access', claim: 'odd~name/with', path: ['a/b', 'c~d'], value: 1 } },
        ],
      },
    ]);
    const a = answer(hook, sampleRequest());
    expect(a).toEqual({
      status: 200,
      json: {
        commands: [
          idPatch(
            { op: 'add', path: '/claims/employee_profile/department_id', value: '4947' },
            { op: 'add', path: '/claims/preferred_airports/3', value: 'lax' },
            { op: 'add', path: '/claims/preferred_airports/-', value: 'sfo' },
            { op: 'remove', path: '/claims/preferred_airports/1' },
          ),
          accessPatch(
            { op: 'add', path: '/claims/https:~1~1example.com~1roles', value: ['a'] },
            { op: 'replace', path: '/claims/odd~0name~1with/a~1b/c~0d', value: 1 },
          ),
        ],
      },
    });
    expect(parsePatchPath('/claims/odd~0name~1with/a~1b/c~0d')).toEqual({
      kind: 'claim',
      claim: 'odd~name/with',
      depth: 2,
      appends: false,
    });
    expect(parsePatchPath('/claims/x~2y').kind).toBe('invalid');
    expect(parsePatchPath('/claims/a/-/b').kind).toBe('invalid');
    expect(parsePatchPath('/token/lifetime/other').kind).toBe('invalid');
  });

  it('an escaped name is checked as the service reads it: https:~1~1x is not "https:", a/b is not "a"', () => {
    expect(checkAnswer({ commands: [idPatch({ op: 'add', path: '/claims/amr~1x', value: 1 })] }, both)).toBeUndefined();
    expect(checkAnswer({ commands: [idPatch({ op: 'add', path: '/claims/amr/0', value: 1 })] }, both)).toMatch(
      /claim "amr" is reserved/,
    );
  });
});

describe('the per-answer protocol check', () => {
  it('enforces lifetime bounds 300..86400 (integers, replace only)', () => {
    const life = (value: unknown, op = 'replace') =>
      checkAnswer({ commands: [accessPatch({ op, path: '/token/lifetime/expiration', value })] }, both);
    expect(life(300)).toBeUndefined();
    expect(life(86_400)).toBeUndefined();
    for (const bad of [299, 86_401, 0, -300, 900.5, '900', null])
      expect(life(bad), String(bad)).toMatch(/outside 300\.\.86400|needs a value/);
    expect(life(900, 'add')).toMatch(/can only be replaced/);
  });

  it('refuses every reserved claim for its token type, and accepts the same claim where it is allowed', () => {
    for (const claim of RESERVED_CLAIMS.both) {
      expect(checkAnswer({ commands: [idPatch({ op: 'add', path: `/claims/${claim}`, value: 1 })] }, both)).toMatch(
        /reserved in ID/,
      );
      expect(checkAnswer({ commands: [accessPatch({ op: 'remove', path: `/claims/${claim}` })] }, both)).toMatch(
        /reserved in access/,
      );
    }
    for (const claim of RESERVED_CLAIMS.idOnly) {
      expect(checkAnswer({ commands: [idPatch({ op: 'replace', path: `/claims/${claim}`, value: 1 })] }, both)).toMatch(
        /reserved in ID/,
      );
      expect(
        checkAnswer({ commands: [accessPatch({ op: 'replace', path: `/claims/${claim}`, value: 1 })] }, both),
      ).toBeUndefined();
    }
    for (const claim of RESERVED_CLAIMS.accessOnly) {
      expect(checkAnswer({ commands: [accessPatch({ op: 'add', path: `/claims/${claim}`, value: 1 })] }, both)).toMatch(
        /reserved in access/,
      );
      expect(
        checkAnswer({ commands: [idPatch({ op: 'add', path: `/claims/${claim}`, value: 1 })] }, both),
      ).toBeUndefined();
    }
  });

  it('refuses unknown command types, unknown ops, values on remove and missing values', () => {
    expect(checkAnswer({ commands: [{ type: 'com.okta.assertion.patch', value: [] }] }, both)).toMatch(
      /is not com\.okta\.identity\.patch/,
    );
    expect(checkAnswer({ commands: [idPatch({ op: 'move', path: '/claims/a' })] }, both)).toMatch(
      /add, replace or remove/,
    );
    expect(checkAnswer({ commands: [idPatch({ op: 'remove', path: '/claims/a', value: 1 })] }, both)).toMatch(
      /carries no value/,
    );
    expect(checkAnswer({ commands: [idPatch({ op: 'add', path: '/claims/a' })] }, both)).toMatch(/needs a value/);
    expect(checkAnswer({ commands: [idPatch({ op: 'replace', path: '/claims/a/-', value: 1 })] }, both)).toMatch(
      /only appends with add/,
    );
  });

  it('an answer over 256 KB never leaves: the error policy answers instead (allow: 204; deny: error), counted', async () => {
    const big = join(dir, 'big.json');
    writeFileSync(big, JSON.stringify({ customerPortalWeb: 'x'.repeat(200 * 1024) }));
    const rules = [
      {
        name: 'huge',
        actions: [{ add: { tokens: 'both', claim: 'blob', lookup: { table: 'big', key: '{{client.id}}' } } }],
      },
    ];
    const lookups = [{ name: 'big', file: big, format: 'json' }];
    const allow = await hookWith(rules, { lookups });
    expect(answer(allow, sampleRequest())).toEqual({ status: 204 });
    expect(allow.telemetry.counters.errors.unsafe_answer).toBe(1);
    expect(allow.telemetry.counters.decisions.error_allow).toBe(1);
    const deny = await hookWith(rules, { lookups, on_error: 'deny', on_error_summary: 'Try again later.' });
    expect(answer(deny, sampleRequest())).toEqual({
      status: 200,
      json: { error: { errorSummary: 'Try again later.' } },
    });
    expect(deny.telemetry.counters.decisions.error_deny).toBe(1);
    // One token only: 200 KB fits.
    const req = sampleRequest();
    delete req.data.access;
    const one = answer(allow, req);
    expect(one.status).toBe(200);
    expect(JSON.stringify(one.json).length).toBeGreaterThan(200 * 1024);
  });
});

describe('renderAnswer', () => {
  it("serialises exactly as JSON.stringify, reusing literal operations' text, and checks each answer again", () => {
    const literal: PatchOp = Object.freeze({ op: 'add', path: '/claims/a~1b', value: { x: [1, 'é'] } });
    const lifetime: PatchOp = Object.freeze({ op: 'replace', path: '/token/lifetime/expiration', value: 900 });
    for (let i = 0; i < 3; i++) {
      const built: PatchOp = { op: 'add', path: '/claims/dept', value: `d"${i}` };
      const decision = { matched: ['r'], deny: undefined, idOps: [literal, built], accessOps: [lifetime, literal] };
      const rendered = renderAnswer(decision, both);
      expect(rendered.status).toBe(200);
      if (rendered.status !== 200) continue;
      expect(rendered.body).toBe(JSON.stringify(answerBody(decision)));
      expect(rendered.commandsJson).toBe(JSON.stringify(answerBody(decision)!.commands));
    }
    const reserved: PatchOp = Object.freeze({ op: 'add', path: '/claims/sub', value: 'x' });
    for (let i = 0; i < 2; i++) {
      expect(() => renderAnswer({ matched: ['r'], deny: undefined, idOps: [reserved], accessOps: [] }, both)).toThrow(
        /commands\[0\]\.value\[0\]: claim "sub" is reserved/,
      );
    }
    expect(checkAnswer({ commands: [idPatch(null)] }, both)).toBe('commands[0].value[0] is not an object');
  });

  it("per-request operations serialise as plain ones; their shape's verdict holds for each value and token", () => {
    const dept: OpShape = Object.freeze({ op: 'add', path: '/claims/dept' });
    const values: unknown[] = ['d"1\\', 'ünï\u2028', 42, { nested: ['x', null] }, ['a'], true, () => 'not JSON'];
    for (const value of values) {
      const op = new BuiltOp(dept, value);
      expect(JSON.stringify(op)).toBe(JSON.stringify({ op: 'add', path: '/claims/dept', value }));
      const decision = { matched: ['r'], deny: undefined, idOps: [op, op], accessOps: [op] };
      const rendered = renderAnswer(decision, both);
      expect(rendered.status === 200 && rendered.body).toBe(JSON.stringify(answerBody(decision)));
    }
    // A claim one token type reserves: refused there only, whichever token's verdict is worked out first.
    const scope: OpShape = Object.freeze({ op: 'replace', path: '/claims/scope' });
    const access = { matched: ['r'], deny: undefined, idOps: [], accessOps: [new BuiltOp(scope, 'x')] };
    const id = { matched: ['r'], deny: undefined, idOps: [new BuiltOp(scope, 'y')], accessOps: [] };
    for (let i = 0; i < 2; i++) {
      expect(renderAnswer(access, both).status).toBe(200);
      expect(() => renderAnswer(id, both)).toThrow(/commands\[0\]\.value\[0\]: claim "scope" is reserved in ID tokens/);
    }
    expect(checkAnswer({ commands: [idPatch(new BuiltOp(dept, undefined))] }, both)).toBe(
      'commands[0].value[0]: add needs a value',
    );
    const lifetime: OpShape = Object.freeze({ op: 'replace', path: '/token/lifetime/expiration' });
    expect(checkAnswer({ commands: [accessPatch(new BuiltOp(lifetime, 900))] }, both)).toBeUndefined();
    expect(checkAnswer({ commands: [accessPatch(new BuiltOp(lifetime, 5))] }, both)).toMatch(/outside 300\.\.86400/);
  });
});
