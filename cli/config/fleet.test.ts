import { describe, expect, it } from 'vitest';
import { parseConfig } from './load.js';
import { parseRoles, ROLES } from '../../platform/config/fleet.js';

describe('fleet config', () => {
  it('runs every role by default and takes a subset', () => {
    expect(parseConfig({}, {}).roles).toEqual([...ROLES]);
    expect(parseConfig({ roles: ['receivers'] }, {}).roles).toEqual(['receivers']);
    expect(() => parseConfig({ roles: ['receiver'] }, {})).toThrow(/roles/);
    expect(() => parseConfig({ roles: [] }, {})).toThrow(/roles/);
  });

  it('parses --roles, refusing unknown names', () => {
    expect(parseRoles('receivers, pollers,receivers')).toEqual(['receivers', 'pollers']);
    expect(() => parseRoles('receivers,sinks')).toThrow(/--roles/);
    expect(() => parseRoles('')).toThrow(/--roles/);
  });

  it('keeps the heartbeat well inside the session time-out, and names a bad instance id', () => {
    const kafka = { brokers: ['k:9092'], session_timeout_ms: 6000, heartbeat_interval_ms: 3000 };
    expect(() => parseConfig({ stream: { kafka } }, {})).toThrow(/heartbeat_interval_ms/);
    expect(parseConfig({ stream: { kafka: { brokers: ['k:9092'] } } }, {}).stream.kafka).toMatchObject({
      session_timeout_ms: 10_000,
      heartbeat_interval_ms: 1000,
    });
    expect(() => parseConfig({ instance_id: 'a b' }, {})).toThrow(/instance_id/);
  });
});
