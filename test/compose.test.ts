/**
 * docker-compose.yml cannot run on the CI machines (no Docker engine), so this
 * keeps it honest statically: the hooklog config it mounts must pass our own
 * schema with the environment compose gives it, and must point at the services
 * and ports compose defines.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../cli/config/load.js';
import { REPO_DIR } from './support/cli.js';

interface Service { image?: string; build?: string; environment?: Record<string, string>; volumes?: string[]; ports?: string[] }
const compose = parse(readFileSync(join(REPO_DIR, 'docker-compose.yml'), 'utf8')) as { services: Record<string, Service> };

describe('docker-compose.yml', () => {
  const hooklog = compose.services.hooklog!;
  const mount = hooklog.volumes!.find((v) => v.endsWith(':/etc/hooklog/hooklog.yaml:ro'))!;
  const raw = parse(readFileSync(join(REPO_DIR, mount.split(':')[0]!), 'utf8'));
  const env = { HOOKLOG_HOOK_SECRET: 'compose-secret-0123456789', CLICKHOUSE_PASSWORD: 'pw' };

  it('mounts a config that our schema accepts, at the path HOOKLOG_CONFIG names', () => {
    expect(hooklog.environment!.HOOKLOG_CONFIG).toBe('/etc/hooklog/hooklog.yaml');
    const config = parseConfig(raw, env);
    expect(config.event_hooks[0]!.auth.secrets).toEqual([env.HOOKLOG_HOOK_SECRET]);
    expect(config.store.clickhouse!.password).toBe('pw');
  });

  it('points hooklog at the Kafka and ClickHouse services compose runs', () => {
    const config = parseConfig(raw, env);
    const kafka = compose.services.kafka!;
    expect(kafka.image).toMatch(/^apache\/kafka:3\.9\./);
    expect(kafka.environment!.KAFKA_PROCESS_ROLES).toBe('broker,controller');
    expect(config.stream.kafka!.brokers).toEqual([kafka.environment!.KAFKA_ADVERTISED_LISTENERS!.replace('PLAINTEXT://', '')]);
    const ch = compose.services.clickhouse!;
    expect(new URL(config.store.clickhouse!.url).host).toBe('clickhouse:8123');
    expect(config.store.clickhouse!.username).toBe(ch.environment!.CLICKHOUSE_USER);
    expect(config.store.database).toBe(ch.environment!.CLICKHOUSE_DB);
    expect(hooklog.ports).toContain(`${config.server.port}:${config.server.port}`);
    expect(config.data_dir).toBe('/var/lib/hooklog');
    expect(hooklog.volumes!.some((v) => v.endsWith(`:${config.data_dir}`))).toBe(true);
  });
});
