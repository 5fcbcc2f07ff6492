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
import { parseRoles } from '../platform/config/fleet.js';
import { REPO_DIR } from './support/cli.js';

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  deploy?: { replicas?: number };
}
const compose = parse(readFileSync(join(REPO_DIR, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, Service>;
};

describe('docker-compose.yml', () => {
  const hooklog = compose.services.receivers!;
  const workers = compose.services.workers!;
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
    expect(config.stream.kafka!.brokers).toEqual([
      kafka.environment!.KAFKA_ADVERTISED_LISTENERS!.replace('PLAINTEXT://', ''),
    ]);
    const ch = compose.services.clickhouse!;
    expect(new URL(config.store.clickhouse!.url).host).toBe('clickhouse:8123');
    expect(config.store.clickhouse!.username).toBe(ch.environment!.CLICKHOUSE_USER);
    expect(config.store.database).toBe(ch.environment!.CLICKHOUSE_DB);
    expect(config.data_dir).toBe('/var/lib/hooklog');
  });

  it('runs a fleet: receivers behind the proxy, workers with the other roles, one config for all', () => {
    const roles = (s: Service) => parseRoles(s.command![s.command!.indexOf('--roles') + 1]!);
    expect(hooklog.command!.slice(0, 3)).toEqual(['node', 'bin/hooklog.js', 'start']);
    expect(roles(hooklog)).toEqual(['receivers']);
    expect(roles(workers).sort()).toEqual(['alerting', 'pollers', 'sink']);
    expect(hooklog.deploy!.replicas).toBeGreaterThan(1);
    expect(workers.deploy!.replicas).toBeGreaterThan(1);
    expect(workers.volumes).toEqual(hooklog.volumes);
    expect(workers.image).toBe(hooklog.image);
    // Load balancers route on the receivers' own readiness, which never waits for a consumer group.
    expect(hooklog.healthcheck!.test.join(' ')).toContain('/readyz?role=receivers');
    // Every instance gets its own name from its container's hostname.
    expect(parseConfig(raw, { ...env, HOSTNAME: 'c0ffee' }).instance_id).toBe('c0ffee');

    const config = parseConfig(raw, env);
    const proxy = compose.services.proxy!;
    expect(proxy.ports).toEqual([`${config.server.port}:8080`]);
    const conf = proxy.volumes!.find((v) => v.endsWith(':/etc/nginx/conf.d/default.conf:ro'))!;
    const nginx = readFileSync(join(REPO_DIR, conf.split(':')[0]!), 'utf8');
    expect(nginx).toContain(`set $receivers receivers:${config.server.port};`);
    expect(nginx).toMatch(/location \/hooks\/ \{/);
    // The proxy's read time-out sits between hooklog's ack budget and the service's 3 s.
    const readMs = Number(/proxy_read_timeout (\d+)ms;/.exec(nginx)![1]);
    expect(readMs).toBeGreaterThan(config.server.ack_timeout_ms);
    expect(readMs).toBeLessThan(3000);
  });

  it('runs Prometheus scraping hooklog, and Grafana provisioned with that datasource and the hooklog dashboard', () => {
    const config = parseConfig(raw, env);
    const hostFile = (service: Service, container: string) => {
      const v = service.volumes!.find((x) => x.split(':')[1] === container);
      expect(v, `${container} mounted`).toBeDefined();
      return join(REPO_DIR, v!.split(':')[0]!);
    };
    const prometheus = compose.services.prometheus!;
    expect(prometheus.image).toMatch(/^prom\/prometheus:v3\./);
    const promConfigPath = prometheus.command!.find((c) => c.startsWith('--config.file='))!.split('=')[1]!;
    const scrape = parse(readFileSync(hostFile(prometheus, promConfigPath), 'utf8')) as {
      scrape_configs: Array<{
        metrics_path: string;
        dns_sd_configs: Array<{ names: string[]; type: string; port: number }>;
      }>;
    };
    const job = scrape.scrape_configs[0]!;
    expect(job.metrics_path).toBe('/metrics');
    // Every replica of both scaled services is a target of its own.
    expect(job.dns_sd_configs[0]).toEqual({ names: ['receivers', 'workers'], type: 'A', port: config.server.port });
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(['receivers', 'workers']));

    const grafana = compose.services.grafana!;
    expect(grafana.image).toMatch(/^grafana\/grafana:/);
    const provisioning = hostFile(grafana, '/etc/grafana/provisioning');
    const datasources = parse(readFileSync(join(provisioning, 'datasources', 'prometheus.yaml'), 'utf8')) as {
      datasources: Array<{ type: string; url: string }>;
    };
    expect(datasources.datasources[0]).toMatchObject({ type: 'prometheus', url: 'http://prometheus:9090' });
    expect(prometheus.ports).toContain('127.0.0.1:9090:9090');
    const providers = parse(readFileSync(join(provisioning, 'dashboards', 'hooklog.yaml'), 'utf8')) as {
      providers: Array<{ options: { path: string } }>;
    };
    const dashboards = hostFile(grafana, providers.providers[0]!.options.path);
    const dashboard = JSON.parse(readFileSync(join(dashboards, 'hooklog.json'), 'utf8')) as {
      uid: string;
      panels: unknown[];
    };
    expect(dashboard.uid).toBe('hooklog');
    expect(dashboard.panels.length).toBeGreaterThan(10);
    expect(grafana.environment!.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH).toBe(
      `${providers.providers[0]!.options.path}/hooklog.json`,
    );
  });

  it('provisions the security overview beside it: the ClickHouse plugin, a datasource on the ClickHouse service, the dashboard', () => {
    const config = parseConfig(raw, env);
    const grafana = compose.services.grafana!;
    const volume = (container: string) =>
      join(REPO_DIR, grafana.volumes!.find((x) => x.split(':')[1] === container)!.split(':')[0]!);
    expect(grafana.environment!.GF_PLUGINS_PREINSTALL_SYNC).toBe('grafana-clickhouse-datasource');
    const ds = parse(
      readFileSync(join(volume('/etc/grafana/provisioning'), 'datasources', 'clickhouse.yaml'), 'utf8'),
    ) as {
      datasources: Array<{
        type: string;
        uid: string;
        jsonData: Record<string, unknown>;
        secureJsonData: Record<string, string>;
      }>;
    };
    const ch = ds.datasources[0]!;
    expect(ch.type).toBe('grafana-clickhouse-datasource');
    const server = new URL(config.store.clickhouse!.url);
    expect(ch.jsonData).toMatchObject({
      host: server.hostname,
      port: Number(server.port),
      protocol: 'http',
      username: config.store.clickhouse!.username,
      defaultDatabase: config.store.database,
    });
    // The password comes from the same variable hooklog's config reads, which compose gives Grafana too.
    expect(ch.secureJsonData.password).toBe('$CLICKHOUSE_PASSWORD');
    expect(grafana.environment!.CLICKHOUSE_PASSWORD).toBe(compose.services.receivers!.environment!.CLICKHOUSE_PASSWORD);
    const security = JSON.parse(readFileSync(join(volume('/etc/grafana/dashboards'), 'security.json'), 'utf8')) as {
      uid: string;
      panels: Array<{ type: string; datasource?: { type: string } }>;
    };
    expect(security.uid).toBe('hooklog-security');
    const data = security.panels.filter((p) => p.type !== 'row');
    expect(data.length).toBeGreaterThanOrEqual(10);
    for (const p of data) expect(p.datasource!.type).toBe('grafana-clickhouse-datasource');
  });
});
