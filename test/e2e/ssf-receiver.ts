/**
 * The SSF receiver as users run it: `hooklog start` with an `ssf_receivers`
 * section (the compiled CLI after `npm run build`, or the sources), on the
 * real Kafka broker or the embedded log, with embedded ClickHouse. The
 * simulated org registers hooklog's push endpoint in an SSF stream (through
 * its configuration document's endpoint, as docs/respond/shared-signals.md says), then pushes CAEP
 * SETs; hooklog stores what it accepts once and refuses a bad SET with its err
 * as a dead letter; with `alerting`, a rule on the SET's LogEvent alerts (SSF
 * events are usable in rules).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { CAEP_CREDENTIAL_CHANGE, CAEP_SESSION_REVOKED } from '../../receivers/ssf/receiver-config.js';
import { SimulatedOrg, SsfTransmitter, type SsfStream } from '../simulated-org/index.js';
import { REPO_DIR, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { writeTestConfig } from '../support/hooklog-config.js';
import { waitFor } from '../support/wait.js';

export interface SsfCliRun {
  /** `npm run build`, then run bin/hooklog.js (HOOKLOG_CLI=built); else the sources through tsx. */
  readonly built: boolean;
  readonly kafkaBrokers?: () => string;
  /** Configure a rule on the session-revoked LogEvent and expect its alert. */
  readonly alerting: boolean;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const RULE = {
  id: 'ssf-session-revoked',
  type: 'match',
  detection: { s: { eventType: 'security.events.caep.session_revoked' }, condition: 's' },
  group_by: ['actor.id'],
};

export function describeSsfCli(run: SsfCliRun): void {
  const name = `${run.built ? 'built ' : ''}hooklog start with ssf_receivers (${run.kafkaBrokers ? 'Kafka' : 'embedded'}${run.alerting ? ', a rule' : ''})`;
  describe(name, () => {
    let sim: SimulatedOrg;
    let transmitter: SsfTransmitter;
    let daemon: Daemon | undefined;
    let dataDir: string;
    let org: string;
    let stream: SsfStream;
    const sql = async (q: string) => (await queryViaAdminSocket(dataDir, q))!.rows as Array<Record<string, string>>;
    const rows = (q: string, what: string, atLeast = 1) =>
      waitFor(
        async () => {
          const r = await sql(q);
          return r;
        },
        { until: (found) => found.length >= atLeast, timeoutMs: 60_000, what },
      );

    beforeAll(async () => {
      if (run.built) {
        // .ci/run has built the tree just before (HOOKLOG_TEST_BUILT=1), as built-cli.test.ts reads it: building it
        // again took a minute of a loaded run, and rewrote dist/ under the other files' processes (HOOKLOG_CLI=built).
        if (process.env.HOOKLOG_TEST_BUILT !== '1')
          execFileSync('npm', ['run', 'build'], { cwd: REPO_DIR, stdio: 'pipe' });
        // startDaemon then runs bin/hooklog.js, the compiled CLI, rather than the sources.
        process.env.HOOKLOG_CLI = 'built';
      }
      sim = await SimulatedOrg.start();
      transmitter = await SsfTransmitter.create(sim, 'RS256');
      const port = await freePort();
      const inst = writeTestConfig(run.kafkaBrokers ? { kafkaBrokers: run.kafkaBrokers() } : {});
      const base = parse(readFileSync(inst.configPath, 'utf8')) as Record<string, Record<string, unknown>>;
      org = inst.org;
      dataDir = base.data_dir as unknown as string;
      const config = {
        ...base,
        server: { ...base.server, port },
        ssf_receivers: [
          {
            id: 'org-ssf',
            org,
            issuer: sim.url,
            configuration_url: transmitter.configurationUrl,
            audience: `http://127.0.0.1:${port}/hooks/ssf/org-ssf`,
          },
        ],
        ...(run.alerting
          ? {
              alerting: {
                group: `alerting-${base.stream!.topic_prefix as string}`,
                max_batch_wait_ms: 100,
                rules: [RULE],
              },
            }
          : {}),
      };
      writeFileSync(inst.configPath, stringify(config));
      daemon = await startDaemon(['--config', inst.configPath]);
      expect(daemon.output()).toContain('"ssf_receivers":["org-ssf"]');
    }, 120_000);

    afterAll(async () => {
      if (daemon) await stopDaemon(daemon);
      await sim?.stop();
    });

    it('is registered with the org through the SSF configuration document', async () => {
      const doc = (await (await fetch(transmitter.configurationUrl)).json()) as { configuration_endpoint: string };
      const res = await fetch(doc.configuration_endpoint, {
        method: 'POST',
        headers: { authorization: 'SSWS sim-token', 'content-type': 'application/json' },
        body: JSON.stringify({
          delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: `${daemon!.url}/hooks/ssf/org-ssf` },
          events_requested: [CAEP_SESSION_REVOKED, CAEP_CREDENTIAL_CHANGE],
        }),
      });
      expect(res.status).toBe(201);
      stream = (await res.json()) as SsfStream;
      expect(stream.aud).toBe(`${daemon!.url}/hooks/ssf/org-ssf`);
    });

    it('stores the SETs it accepts once and dead-letters the one it refuses', async () => {
      const user = { id: '00u1bob', type: 'User', alternateId: 'bob@acme.example' };
      const [revoked] = await transmitter.transmit({ eventType: 'user.session.end', actor: user });
      const [changed] = await transmitter.transmit({ eventType: 'user.account.update_password', actor: user });
      expect([revoked!.status, changed!.status]).toEqual([202, 202]);
      // The same jti again (here re-signed, so even its bytes differ): 202, and not stored twice.
      const again = await transmitter.credentialChange(
        { id: user.id, login: user.alternateId },
        { credentialType: 'password', changeType: 'update' },
        { aud: stream.aud, jti: changed!.jti },
      );
      expect((await transmitter.deliver(again, stream)).status).toBe(202);
      const forged = await transmitter.sessionRevoked(
        { id: user.id, login: user.alternateId },
        { aud: 'https://elsewhere.example' },
      );
      expect(await transmitter.deliver(forged, stream)).toMatchObject({ status: 400, err: 'invalid_audience' });

      const stored = await rows(
        `SELECT jti, event_name, subject_sub, subject_email FROM security_events WHERE org = '${org}' ORDER BY event_name`,
        'the accepted SETs in security_events',
        2,
      );
      expect(stored).toEqual([
        {
          jti: changed!.jti,
          event_name: 'security.events.caep.credential_change',
          subject_sub: user.id,
          subject_email: user.alternateId,
        },
        {
          jti: revoked!.jti,
          event_name: 'security.events.caep.session_revoked',
          subject_sub: user.id,
          subject_email: user.alternateId,
        },
      ]);
      const letters = await rows(
        `SELECT reason, raw FROM deadletter WHERE origin = 'ssf-receiver'`,
        'the refused SET in deadletter',
      );
      expect(letters).toEqual([
        { reason: 'RECORD_INVALID: invalid_audience: aud does not name this receiver', raw: forged },
      ]);

      const metrics = await (await fetch(`${daemon!.url}/metrics`)).text();
      const count = (result: string, err = '') =>
        new RegExp(
          `hooklog_ssf_receiver_sets_total\\{receiver="org-ssf",result="${result}",err="${err}"[^}]*\\} (\\d+)`,
        ).exec(metrics)?.[1];
      expect([count('accepted'), count('duplicate'), count('refused', 'invalid_audience')]).toEqual(['2', '1', '1']);
    });

    if (run.alerting)
      it('alerts on a rule matching the SET as a LogEvent', async () => {
        const alerts = await rows(`SELECT rule_id FROM alerts FINAL WHERE org = '${org}'`, 'the alert');
        expect(alerts).toEqual([{ rule_id: RULE.id }]);
      });
  });
}
