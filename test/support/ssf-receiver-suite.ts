/**
 * The SSF receiver end to end inside one process, run over the embedded
 * stream and over the real Kafka broker (receivers/ssf/receiver-*.test.ts): the simulated
 * org as transmitter (keys at its SSF configuration's jwks_uri, a push stream
 * registered over HTTP, CAEP SETs pushed by RFC 8935), hooklog's app as
 * `hooklog start` builds it from parsed config, and the ClickHouse sink into
 * chdb. The Done-when of the receiver: each bad SET refused with its err and
 * dead-lettered with its bytes, a repeated jti stored once, nothing refused
 * an event, and the stored events queryable beside the System Log.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { createApp } from '../../cli/app.js';
import { startClickHouseSink, type ClickHouseSink } from '../../consumers/clickhouse-sink/index.js';
import { silentLogger } from '../../platform/log.js';
import { renderMetrics } from '../../platform/metrics.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { Header, topicNames, type Topics } from '../../platform/stream/headers.js';
import type { ConsumedRecord, Stream } from '../../platform/stream/types.js';
import { SimulatedOrg, SsfTransmitter, type SsfStream } from '../simulated-org/index.js';
import { randomName, waitFor } from './wait.js';
import { CAEP_CREDENTIAL_CHANGE, CAEP_SESSION_REVOKED, SSF_VERIFICATION } from '../../receivers/ssf/receiver-config.js';
import { startSsfReceivers } from '../../receivers/ssf/routes.js';
import { securityEventsPipeline } from '../../receivers/ssf/security-event-row.js';
import { SET_ERRORS } from '../../schemas/ssf.js';

export const AUTH_SECRET = 'Bearer ssf-push-secret-0123456789';

export interface SsfWorld {
  readonly stream: Stream;
  readonly store: Store;
  readonly topics: Topics;
  readonly sim: SimulatedOrg;
  readonly transmitter: SsfTransmitter;
  /** hooklog's base URL, and the push stream the org created for its receiver `acme-ssf`. */
  readonly url: string;
  readonly pushStream: SsfStream;
  /** Starts another hooklog app on the same stream and config (a restarted process: nothing remembered). */
  restart(): Promise<string>;
  close(): Promise<void>;
}

/** Receivers `acme-ssf` (keys through the SSF configuration), `acme-auth` (jwks_uri, Authorization), `down`. */
export async function startSsfWorld(stream: Stream): Promise<SsfWorld> {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-ssf-'));
  const log = silentLogger();
  const store = openStore({ database: randomName('ssf'), dataDir: dir, logger: log });
  await migrate(store, log);
  const topics = topicNames(randomName('ssf').replaceAll('_', '-'));
  await stream.ensureTopics([
    { name: topics.logs, partitions: 2 },
    { name: topics.deadletter, partitions: 1 },
    { name: topics.securityEvents, partitions: 2 },
  ]);
  const sim = await SimulatedOrg.start();
  const transmitter = await SsfTransmitter.create(sim, 'ES256');

  const servers: Server[] = [];
  const listen = async (): Promise<{ server: Server; url: string }> => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    servers.push(server);
    return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  };
  const first = await listen();
  const common = { org: 'acme', issuer: sim.url, jwks_cache_max_age_ms: 1500, jwks_cooldown_ms: 200 };
  const config = parseConfig({
    data_dir: dir,
    ssf_receivers: [
      {
        ...common,
        id: 'acme-ssf',
        configuration_url: transmitter.configurationUrl,
        audience: `${first.url}/hooks/ssf/acme-ssf`,
        max_body_bytes: 4096,
      },
      {
        ...common,
        id: 'acme-auth',
        jwks_uri: transmitter.jwksUri,
        audience: `${first.url}/hooks/ssf/acme-auth`,
        authorization: { secrets: [AUTH_SECRET] },
      },
      {
        ...common,
        id: 'down',
        configuration_url: 'http://127.0.0.1:9/.well-known/ssf-configuration',
        audience: 'x',
        jwks_timeout_ms: 500,
      },
    ],
  });
  const serve = async (server: Server) => {
    const ssf = await startSsfReceivers(config.ssf_receivers, log);
    server.on('request', createApp({ config, stream, topics, probes: [], logger: log, ssf }).callback());
  };
  await serve(first.server);

  // Register hooklog's push endpoint with the org's SSF stream, as docs/respond/shared-signals.md says.
  const res = await fetch(transmitter.streams.endpoint, {
    method: 'POST',
    headers: { authorization: 'SSWS sim-token', 'content-type': 'application/json' },
    body: JSON.stringify({
      delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: `${first.url}/hooks/ssf/acme-ssf` },
      events_requested: [CAEP_SESSION_REVOKED, CAEP_CREDENTIAL_CHANGE, SSF_VERIFICATION],
    }),
  });
  if (res.status !== 201) throw new Error(`stream not created: ${res.status} ${await res.text()}`);
  const pushStream = (await res.json()) as SsfStream;

  const sink: ClickHouseSink = await startClickHouseSink({
    stream,
    store,
    topics,
    group: randomName('sink'),
    logger: log,
    maxBatchWaitMs: 100,
    extraPipelines: [securityEventsPipeline(topics.securityEvents)],
  });
  return {
    stream,
    store,
    topics,
    sim,
    transmitter,
    url: first.url,
    pushStream,
    async restart() {
      const next = await listen();
      await serve(next.server);
      return next.url;
    },
    async close() {
      await sink.stop();
      for (const s of servers)
        await new Promise<void>((r) => {
          s.close(() => r());
          s.closeAllConnections();
        });
      await sim.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Every record of `topic` once `atLeast` are there and each partition was read to its end (a fresh group,
 * from the start). On Kafka a transaction leaves a commit marker after its records, never handed to a
 * consumer: there a partition is read once at most one offset is left.
 */
export async function readAll(stream: Stream, topic: string, atLeast: number): Promise<ConsumedRecord[]> {
  const got: ConsumedRecord[] = [];
  const last = new Map<number, number>();
  const consumer = await stream.consume({
    topic,
    group: randomName('read'),
    maxBatchWaitMs: 20,
    handler: async (b) => {
      got.push(...b.records);
      for (const r of b.records) last.set(r.partition, Math.max(last.get(r.partition) ?? -1, r.offset));
    },
  });
  const markers = stream.kind === 'kafka' ? 1 : 0;
  try {
    const readToEnd = async () =>
      [...(await stream.latestOffsets(topic))].every(([p, end]) => end - (last.get(p) ?? -1) - 1 <= markers);
    await waitFor(async () => got.length >= atLeast && (await readToEnd()), {
      seen: () => ({ read: got.length, 'last offsets read': Object.fromEntries(last) }),
      timeoutMs: 30_000,
      what: `${atLeast} records in ${topic}`,
    });
  } finally {
    await consumer.stop();
  }
  return got;
}

/** One sample of the SSF receiver's SET counter, 0 when absent. */
export async function setCount(labels: Record<string, string>): Promise<number> {
  const text = (await renderMetrics()).body;
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('hooklog_ssf_receiver_sets_total{')) continue;
    const have = Object.fromEntries([...line.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) total += Number(line.split(' ').pop());
  }
  return total;
}

export const jtiOf = (set: string): string =>
  (JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString()) as { jti: string }).jti;

/** The receiver's Done-when, on `open()`'s stream. */
export function describeSsfReceiver(kind: string, open: () => Promise<Stream>): void {
  describe(`SSF receiver (${kind} stream, chdb)`, () => {
    let w: SsfWorld;
    let stream: Stream;
    /** jtis answered 202, and every push answered 400 (with its bytes and err). */
    const accepted = new Set<string>();
    const refused: Array<{ body: Buffer; err: string }> = [];
    const user = { id: '00u1alice', login: 'alice@acme.example', sessionId: 'idx-alice-1' };
    const aud = () => w.pushStream.aud;
    const endpoint = (id = 'acme-ssf', base = w.url) => `${base}/hooks/ssf/${id}`;

    /** Pushes `body` once; records what a 202 accepted and what a 400 refused. */
    async function push(body: string | Buffer, opts: { contentType?: string; url?: string; auth?: string } = {}) {
      const r = await w.transmitter.push(opts.url ?? endpoint(), body, opts.auth, opts.contentType);
      if (r.status === 202) accepted.add(jtiOf(String(body)));
      if (r.status === 400) refused.push({ body: Buffer.from(body), err: r.err ?? '' });
      return r;
    }

    beforeAll(async () => {
      stream = await open();
      w = await startSsfWorld(stream);
    });
    afterAll(async () => {
      await w?.close();
      await stream?.close();
    });

    it('takes the CAEP SETs the org transmits to the stream it registered: 202, empty', async () => {
      expect(w.pushStream.aud).toBe(endpoint());
      expect(w.pushStream.events_delivered).toContain(CAEP_SESSION_REVOKED);
      const ended = await w.transmitter.transmit({
        eventType: 'user.session.end',
        actor: { id: user.id, alternateId: user.login },
        authenticationContext: { externalSessionId: user.sessionId },
      });
      const factor = await w.transmitter.transmit({
        eventType: 'user.mfa.factor.deactivate',
        actor: { id: user.id, alternateId: user.login },
      });
      // The stream's verification (SSF §8.1.4) is a SET like the others.
      const verified = await w.transmitter.verify(w.pushStream, 'state-1');
      for (const d of [...ended, ...factor, verified]) {
        expect(d).toMatchObject({ status: 202, body: '', attempts: 1 });
        accepted.add(d.jti);
      }
      expect(accepted.size).toBe(3);
      expect(w.sim.violations).toEqual([]);
    });

    it('refuses each bad SET with its RFC 8935 err, dead-lettered with its bytes', async () => {
      const t = w.transmitter;
      const good = () => t.sessionRevoked(user, { aud: aud() });
      const [a, b] = [await good(), await good()];
      const now = Math.floor(Date.now() / 1000);
      const claims = { iss: t.issuer, aud: aud(), iat: now, jti: 'none-1', events: { [CAEP_SESSION_REVOKED]: {} } };
      const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      const risc = { 'https://schemas.openid.net/secevent/risc/event-type/account-disabled': {} };
      type Case = [string, () => Promise<string | { body: string; contentType: string }>, string];
      // Decided from the request and the JOSE header alone: the key set is never consulted.
      const byHeader: Case[] = [
        ['alg none', async () => `${b64({ alg: 'none', typ: 'secevent+jwt' })}.${b64(claims)}.`, 'invalid_key'],
        ['non-SET typ', () => t.sessionRevoked(user, { aud: aud(), typ: 'JWT' }), 'invalid_request'],
        ['malformed body', async () => 'this is not a SET', 'invalid_request'],
        ['JSON body', async () => ({ body: '{"events":{}}', contentType: 'application/json' }), 'invalid_request'],
        ['wrong content type', async () => ({ body: await good(), contentType: 'application/jwt' }), 'invalid_request'],
        [
          'body over the limit',
          () => t.sessionRevoked(user, { aud: aud(), reason: 'x'.repeat(5000) }),
          'invalid_request',
        ],
      ];
      const byKey: Case[] = [
        [
          'wrong signature',
          async () => `${a.split('.').slice(0, 2).join('.')}.${b.split('.')[2]}`,
          'authentication_failed',
        ],
        ['wrong iss', () => t.sessionRevoked(user, { aud: aud(), iss: 'https://evil.example' }), 'invalid_issuer'],
        ['wrong aud', () => t.sessionRevoked(user, { aud: 'https://someone-else.example/ssf' }), 'invalid_audience'],
        ['event type not requested', () => t.sign(risc, {}, { aud: aud() }), 'access_denied'],
      ];
      const run = async ([what, make, err]: Case) => {
        const m = await make();
        const answer = typeof m === 'string' ? await push(m) : await push(m.body, { contentType: m.contentType });
        expect({ what, ...answer }).toMatchObject({ what, status: 400, err });
      };
      const fetches = t.jwksFetches;
      for (const c of byHeader) await run(c);
      expect(t.jwksFetches).toBe(fetches);
      for (const c of byKey) await run(c);
    });

    it('refuses an unknown kid (at most one key fetch per cooldown) and a key removed by rotation', async () => {
      const before = w.transmitter.jwksFetches;
      const started = Date.now();
      const made = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          w.transmitter.sessionRevoked(user, { aud: aud(), headerKid: `made-up-${i}` }),
        ),
      );
      for (const r of await Promise.all(made.map((s) => push(s))))
        expect(r).toMatchObject({ status: 400, err: 'invalid_key' });
      expect(w.transmitter.jwksFetches - before).toBeLessThanOrEqual(1 + Math.ceil((Date.now() - started) / 200));

      // Rotation: the new key is published and the old one removed at once; the first SET naming the
      // new kid refetches the keys (within the cooldown it is refused, and re-sent unchanged).
      const oldKid = w.transmitter.currentKid;
      await w.transmitter.rotate();
      w.transmitter.retire(oldKid);
      const fresh = await w.transmitter.sessionRevoked(user, { aud: aud() });
      await waitFor(async () => (await push(fresh)).status, {
        until: (n) => n === 202,
        what: 'the rotated-in key to verify',
      });
      const stale = await w.transmitter.sessionRevoked(user, { aud: aud(), kid: oldKid });
      expect(await push(stale)).toMatchObject({ status: 400, err: 'invalid_key' });

      // A key removed while its kid is still cached stops verifying once the cache's max age has passed.
      const middle = w.transmitter.currentKid;
      await w.transmitter.rotate();
      const next = await w.transmitter.sessionRevoked(user, { aud: aud() });
      await waitFor(async () => (await push(next)).status, { until: (n) => n === 202, what: 'the next key to verify' });
      w.transmitter.retire(middle);
      const late = await w.transmitter.sessionRevoked(user, { aud: aud(), kid: middle });
      const fetchedBefore = w.transmitter.jwksFetches;
      await waitFor(async () => (await push(late)).err, {
        until: (v) => v === 'invalid_key',
        what: 'the removed key to stop verifying',
      });
      expect(w.transmitter.jwksFetches).toBeGreaterThan(fetchedBefore);
    });

    it('accepts a repeated jti (202) and stores it once, also after a restart forgot it', async () => {
      const set = await w.transmitter.credentialChange(
        user,
        { credentialType: 'password', changeType: 'update' },
        { aud: aud() },
      );
      const dupes = await setCount({ receiver: 'acme-ssf', result: 'duplicate' });
      const answers = [await push(set), await push(set), ...(await Promise.all([push(set), push(set)]))];
      expect(answers.map((r) => r.status)).toEqual([202, 202, 202, 202]);
      expect(await setCount({ receiver: 'acme-ssf', result: 'duplicate' })).toBe(dupes + 3);
      const other = await w.restart();
      expect((await push(set, { url: endpoint('acme-ssf', other) })).status).toBe(202);
      const copies = (await readAll(w.stream, w.topics.securityEvents, accepted.size + 1)).filter(
        (r) => (JSON.parse(r.value.toString()) as { jti: string }).jti === jtiOf(set),
      );
      expect(copies).toHaveLength(2);
    });

    it('requires the configured Authorization header (authentication_failed, nothing kept)', async () => {
      const set = await w.transmitter.sessionRevoked(user, { aud: endpoint('acme-auth') });
      const url = endpoint('acme-auth');
      expect(await w.transmitter.push(url, set)).toMatchObject({ status: 400, err: 'authentication_failed' });
      expect(await w.transmitter.push(url, set, 'Bearer wrong-secret-0123456789')).toMatchObject({
        err: 'authentication_failed',
      });
      expect((await push(set, { url, auth: AUTH_SECRET })).status).toBe(202);
    });

    it('answers 503 while the keys cannot be had, 404 for an unknown receiver; neither is kept', async () => {
      const set = await w.transmitter.sessionRevoked(user, { aud: 'x' });
      const down = await w.transmitter.push(endpoint('down'), set);
      expect(down.status).toBe(503);
      expect((await w.transmitter.push(endpoint('nobody'), set)).status).toBe(404);
      expect(await setCount({ receiver: 'down', result: 'unavailable' })).toBeGreaterThan(0);
    });

    it('stores only what it accepted, once each, beside the System Log; every refusal is a dead letter', async () => {
      const byErr = (err: string) => refused.filter((r) => r.err === err).length;
      for (const err of SET_ERRORS)
        expect(await setCount({ result: 'refused', err })).toBeGreaterThanOrEqual(byErr(err));

      // The topics: the SETs and their LogEvents, exactly the accepted jtis (the restart's copy twice).
      const sets = await readAll(w.stream, w.topics.securityEvents, accepted.size + 1);
      const jtis = sets.map((r) => (JSON.parse(r.value.toString()) as { jti: string }).jti);
      expect(new Set(jtis)).toEqual(accepted);
      const logs = await readAll(w.stream, w.topics.logs, accepted.size + 1);
      expect(logs.every((r) => r.headers[Header.source] === 'ssf')).toBe(true);
      expect(
        new Set(logs.map((r) => (JSON.parse(r.value.toString()) as { transaction: { id: string } }).transaction.id)),
      ).toEqual(accepted);

      // Dead letters: one per push answered 400 (the Authorization refusals, sent around `push`, keep nothing).
      const kept = refused;
      const letters = (await readAll(w.stream, w.topics.deadletter, kept.length)).filter(
        (r) => r.headers[Header.origin] === 'ssf-receiver',
      );
      expect(letters.map((r) => r.headers['hooklog-set-err']).sort()).toEqual(kept.map((r) => r.err).sort());
      const over = letters.find((r) => r.headers['hooklog-body-bytes'] !== String(r.value.length));
      expect(over?.value.length).toBe(0);
      const withBytes = letters
        .filter((r) => r !== over)
        .map((r) => r.value.toString())
        .sort();
      expect(withBytes).toEqual(
        kept
          .filter((r) => r.body.length <= 4096)
          .map((r) => r.body.toString())
          .sort(),
      );

      // ClickHouse: each accepted SET once in security_events, its LogEvent once in events.
      const db = w.store.database;
      await w.stream.append(w.topics.logs, [signIn(user)]);
      const stored = await waitFor(
        async () => {
          const rows = await w.store.query<{ jti: string }>(`SELECT jti FROM ${db}.security_events WHERE org = 'acme'`);
          return rows;
        },
        {
          until: (rows) => rows.length === accepted.size,
          timeoutMs: 30_000,
          what: 'every accepted SET in security_events',
        },
      );
      expect(new Set(stored.map((r) => r.jti))).toEqual(accepted);
      const events = await waitFor(
        async () => {
          const rows = await w.store.query<{ n: string }>(
            `SELECT count() AS n FROM ${db}.events AS e INNER JOIN ${db}.security_events AS s ON e.uuid = s.event_uuid`,
          );
          return rows;
        },
        {
          until: (rows) => Number(rows[0]!.n) === accepted.size,
          timeoutMs: 30_000,
          what: "each SET's LogEvent in events",
        },
      );
      expect(Number(events[0]!.n)).toBe(accepted.size);

      // The guide's query: each session revoked over SSF, with the user's sign-ins in the hour before.
      const joined = await waitFor(
        async () => {
          const rows = await w.store.query<Record<string, string>>(GUIDE_JOIN.replaceAll('{db}', db));
          return rows;
        },
        { until: (rows) => rows.length > 0, timeoutMs: 30_000, what: "the guide's join to find the sign-in" },
      );
      expect(joined[0]).toMatchObject({
        subject_email: user.login,
        sign_in_type: 'user.session.start',
        session_id: user.sessionId,
      });
    });
  });
}

/** docs/respond/shared-signals.md, "Where the events go": the query joining SSF events with the System Log. */
export const GUIDE_JOIN = `SELECT s.event_time, s.subject_email, s.session_id, e.published, e.event_type AS sign_in_type, e.client_ip
FROM {db}.security_events AS s
INNER JOIN {db}.events AS e ON e.org = s.org AND e.actor_id = s.subject_sub
WHERE s.org = 'acme' AND s.event_name = 'security.events.caep.session_revoked'
  AND e.event_type = 'user.session.start'
  AND e.published BETWEEN s.event_time - INTERVAL 1 HOUR AND s.event_time
ORDER BY s.event_time, e.published`;

/** The user's sign-in ten minutes ago, as the event hook would append it. */
function signIn(user: { id: string; login: string; sessionId: string }) {
  const event = {
    uuid: randomUUID(),
    published: new Date(Date.now() - 600_000).toISOString(),
    eventType: 'user.session.start',
    actor: { id: user.id, type: 'User', alternateId: user.login },
    client: { ipAddress: '198.51.100.7' },
    authenticationContext: { externalSessionId: user.sessionId },
    outcome: { result: 'SUCCESS' },
  };
  return {
    key: 'acme',
    value: Buffer.from(JSON.stringify(event)),
    headers: { [Header.org]: 'acme', [Header.source]: 'hook', [Header.receivedAt]: new Date().toISOString() },
  };
}
