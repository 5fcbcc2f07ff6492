/** Helpers for this folder's tests and its bench only. */
import { mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tokenHookRequest } from '../../test/fixtures/index.js';
import { parseConfig } from '../../cli/config/load.js';
import type { Config } from '../../cli/config/schema.js';
import type { Logger } from '../../platform/log.js';
import { topicNames } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import { createApp } from '../../cli/app.js';
import { afterAll, beforeAll } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { decide, startTokenHooks, type TokenHook, type TokenHooks } from './service.js';

export const HOOK_SECRET = 'token-hook-secret-0123456789';

/** Loosely typed JSON, so tests can reshape samples member by member. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type LooseJson = Record<string, any>;

/** A well-formed request (ID and access token, no refresh; test/fixtures/token-hook): a fresh copy each call. */
export function sampleRequest(): LooseJson {
  return tokenHookRequest() as LooseJson;
}

/** A parsed, validated config with the given token hooks, as production builds it. */
export function configWith(tokenHooks: unknown[], over: Record<string, unknown> = {}): Config {
  return parseConfig({ server: { host: '127.0.0.1', port: 0 }, token_hooks: tokenHooks, ...over }, {});
}

/** A header-auth token hook entry with the given rules; audit off unless overridden. */
export function hookEntry(rules: unknown[], over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'th',
    org: 'acme',
    auth: { type: 'header', secrets: [HOOK_SECRET] },
    rules,
    audit: { enabled: false },
    ...over,
  };
}

export interface RunningApp {
  readonly url: string;
  readonly hooks: TokenHooks;
  close(): Promise<void>;
}

/** The real Koa app (receivers/app.ts) with the token hooks started, listening on 127.0.0.1. */
export async function startApp(config: Config, stream: Stream, logger: Logger): Promise<RunningApp> {
  const topics = topicNames(config.stream.topic_prefix);
  const hooks = await startTokenHooks({
    hooks: config.token_hooks,
    stream,
    topic: topics.tokenDecisions,
    spoolDir: freshDir('token-spool'),
    logger,
  });
  const app = createApp({ config, stream, topics, probes: [], logger, tokenHooks: hooks });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hooks,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await hooks.stop();
    },
  };
}

export interface Reply {
  readonly status: number;
  readonly json: unknown;
}

/** POSTs to a token hook as the service does: JSON, the auth header, a 3 s time-out. */
export async function postToken(
  url: string,
  body: unknown,
  headers: Record<string, string> = { authorization: HOOK_SECRET },
  hookId = 'th',
): Promise<Reply> {
  const res = await fetch(`${url}/hooks/token/${hookId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(3000),
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

export const freshDir = (prefix: string): string => mkdtempSync(join(tmpdir(), `hooklog-${prefix}-`));

/**
 * The harness the answer-level tests share: one embedded stream per file,
 * hooks started from rules exactly as production starts them, and `answer`
 * turning a decision into what the service would receive.
 */
export function tokenHookHarness(name: string) {
  const log = silentLogger();
  const dir = freshDir(name);
  let stream: EmbeddedStream;
  const started: TokenHooks[] = [];
  beforeAll(async () => {
    stream = await openEmbeddedStream({ dataDir: dir, logger: log });
  });
  afterAll(async () => {
    for (const h of started) await h.stop();
    await stream.close();
  });
  async function hookWith(rules: unknown[], over: Record<string, unknown> = {}): Promise<TokenHook> {
    const config = configWith([hookEntry(rules, over)]);
    const hooks = await startTokenHooks({
      hooks: config.token_hooks,
      stream,
      topic: 'unused',
      spoolDir: join(dir, 'spool'),
      logger: log,
    });
    started.push(hooks);
    return hooks.get('th')!;
  }
  function answer(hook: TokenHook, req: unknown): { status: number; json?: unknown } {
    const a = decide(hook, Buffer.from(JSON.stringify(req)), 'test');
    if (a.status === 204) return { status: 204 };
    if (a.status === 400) return { status: 400, json: { error: a.error } };
    return { status: 200, json: JSON.parse(a.body) };
  }
  return { hookWith, answer, log, dir };
}

export const idPatch = (...value: unknown[]) => ({ type: 'com.okta.identity.patch', value });
export const accessPatch = (...value: unknown[]) => ({ type: 'com.okta.access.patch', value });
