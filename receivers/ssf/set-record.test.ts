/**
 * What an accepted SET becomes: the event name, the stable uuid, the subject
 * summary for each RFC 9493 format, the LogEvent the rules read (valid as the
 * event hooks would judge it) and the row the sink writes.
 */
import { describe, expect, it } from 'vitest';
import { meetsLogEventRules } from '../../schemas/logevent.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { CAEP_CREDENTIAL_CHANGE, CAEP_SESSION_REVOKED } from './receiver-config.js';
import { mapSecurityEventRecord } from './security-event-row.js';
import { eventNameOf, eventUuid, setRecords, type AcceptedSet } from './set-record.js';
import { summarizeSubject } from './subject.js';
import type { SetClaims } from './verify.js';

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function accepted(claims: Partial<SetClaims> & Pick<SetClaims, 'events'>): AcceptedSet {
  return {
    receiverId: 'acme-ssf',
    org: 'acme',
    token: 'h.p.s',
    claims: { iss: 'https://acme.example.com', jti: 'j-1', iat: 1_700_000_100, ...claims },
    alg: 'ES256',
    kid: 'k1',
    receivedAt: new Date('2026-01-02T03:04:05.006Z'),
    requestId: 'req-1',
  };
}

describe('set records', () => {
  it('names events after their profile and type, anything else security.events.other', () => {
    expect(eventNameOf(CAEP_SESSION_REVOKED)).toBe('security.events.caep.session_revoked');
    expect(eventNameOf(CAEP_CREDENTIAL_CHANGE)).toBe('security.events.caep.credential_change');
    expect(eventNameOf('https://schemas.openid.net/secevent/risc/event-type/account-disabled')).toBe(
      'security.events.risc.account_disabled',
    );
    expect(eventNameOf('urn:example:thing')).toBe('security.events.other');
  });

  it('derives one canonical uuid per (issuer, jti)', () => {
    const a = eventUuid('https://acme.example.com', 'j-1');
    expect(a).toMatch(CANONICAL_UUID);
    expect(a[14]).toBe('8');
    expect(eventUuid('https://acme.example.com', 'j-1')).toBe(a);
    expect(eventUuid('https://acme.example.com', 'j-2')).not.toBe(a);
    expect(eventUuid('https://other.example.com', 'j-1')).not.toBe(a);
  });

  it('summarises each subject identifier format', () => {
    expect(summarizeSubject({ format: 'email', email: 'a@x.io' })).toMatchObject({ format: 'email', email: 'a@x.io' });
    expect(summarizeSubject({ format: 'iss_sub', iss: 'https://i', sub: '00u1' })).toMatchObject({
      iss: 'https://i',
      sub: '00u1',
    });
    expect(summarizeSubject({ format: 'opaque', id: 'x9' })).toMatchObject({ format: 'opaque', other: 'x9' });
    expect(
      summarizeSubject({
        format: 'complex',
        user: {
          format: 'aliases',
          identifiers: [
            { format: 'email', email: 'a@x.io' },
            { format: 'iss_sub', iss: 'https://i', sub: '00u1' },
          ],
        },
        session: { format: 'opaque', id: 's-7' },
      }),
    ).toEqual({ format: 'complex', email: 'a@x.io', iss: 'https://i', sub: '00u1', other: '', session: 's-7' });
    expect(summarizeSubject('nobody')).toMatchObject({ format: '', email: '', sub: '' });
    expect(summarizeSubject({ format: 'made-up', x: 1 })).toMatchObject({ format: 'made-up', email: '' });
  });

  it('makes a LogEvent the rules can read, keyed and marked like every record', () => {
    const { logEvent, set, value } = setRecords(
      accepted({
        sub_id: {
          format: 'complex',
          user: { format: 'iss_sub', iss: 'https://i', sub: '00u1' },
          session: { format: 'opaque', id: 's-7' },
        },
        events: {
          [CAEP_SESSION_REVOKED]: {
            event_timestamp: 1_700_000_000,
            initiating_entity: 'admin',
            reason_admin: { en: 'stolen laptop' },
          },
        },
        txn: 't-1',
      }),
    );
    const e = JSON.parse(logEvent.value.toString()) as Record<string, unknown>;
    expect(meetsLogEventRules(e)).toBe(true);
    expect(e).toMatchObject({
      uuid: eventUuid('https://acme.example.com', 'j-1'),
      published: '2023-11-14T22:13:20.000Z',
      eventType: 'security.events.caep.session_revoked',
      actor: { id: '00u1', type: 'User', alternateId: '00u1' },
      outcome: { result: 'SUCCESS', reason: 'stolen laptop' },
      authenticationContext: { externalSessionId: 's-7' },
      transaction: { type: 'SSF', id: 'j-1' },
      debugContext: { debugData: { initiatingEntity: 'admin', txn: 't-1', setEventType: CAEP_SESSION_REVOKED } },
    });
    for (const r of [logEvent, set]) {
      expect(r.key).toBe('acme');
      expect(r.headers).toMatchObject({ [Header.org]: 'acme', [Header.source]: 'ssf', [Header.hookId]: 'acme-ssf' });
    }
    expect(value.event_time).toBe('2023-11-14T22:13:20.000Z');
    expect(value.issued_at).toBe('2023-11-14T22:15:00.000Z');
  });

  it('falls back to iat when the event has no usable event_timestamp, and leaves an unknown actor out', () => {
    const { logEvent } = setRecords(accepted({ events: { [CAEP_CREDENTIAL_CHANGE]: { event_timestamp: 'soon' } } }));
    const e = JSON.parse(logEvent.value.toString()) as Record<string, unknown>;
    expect(e.published).toBe('2023-11-14T22:15:00.000Z');
    expect(e.actor).toBeUndefined();
  });

  it('maps the security-events record to its row, and refuses one without its identity', () => {
    const { set } = setRecords(
      accepted({
        sub_id: { format: 'email', email: 'a@x.io' },
        events: { [CAEP_CREDENTIAL_CHANGE]: { credential_type: 'password', change_type: 'update' } },
      }),
    );
    const rec = { ...set, topic: 't', partition: 0, offset: 0, timestamp: 0 } as ConsumedRecord;
    const row = mapSecurityEventRecord(rec);
    expect(row.ok).toBe(true);
    if (row.ok)
      expect(row.row).toMatchObject({
        org: 'acme',
        issuer: 'https://acme.example.com',
        jti: 'j-1',
        event_name: 'security.events.caep.credential_change',
        event_types: [CAEP_CREDENTIAL_CHANGE],
        subject_email: 'a@x.io',
        event_time: '2023-11-14 22:15:00.000',
        received_at: '2026-01-02 03:04:05.006',
        set_token: 'h.p.s',
      });
    const bad = { ...rec, value: Buffer.from(JSON.stringify({ org: 'acme' })) };
    expect(mapSecurityEventRecord(bad).ok).toBe(false);
    expect(mapSecurityEventRecord({ ...rec, value: Buffer.from('{') }).ok).toBe(false);
  });
});
