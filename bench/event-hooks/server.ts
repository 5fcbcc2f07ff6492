/**
 * The receiver under test, in a process of its own (so the load generator
 * does not share its event loop): the stream, hooklog's topics and the Koa app
 * exactly as `hooklog start` composes them, without the ClickHouse sink, so the
 * figures are the receiver's. Argument: the hooklog config as JSON. Prints
 * `{"url": ...}` once listening; exits on SIGTERM.
 *
 * Beside it, on FLOOR_PATH, the HTTP floor: what any receiver on node:http pays before doing anything of its
 * own. It reads the body, cuts the events out where the request's header says they are (it reads no byte of
 * them), appends them to the same topic with the receiver's record headers, and answers 204 once they are
 * durable: no authentication, validation, dedupe, permits, deadline or telemetry. Receiver ÷ floor is what
 * hooklog's own work costs; floor ÷ direct append is what HTTP costs.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../cli/config/load.js';
import { createLogger } from '../../platform/log.js';
import { collectProcessMetrics } from '../../platform/metrics.js';
import { ensureHooklogTopics, openStream } from '../../platform/stream/open.js';
import { createApp } from '../../cli/app.js';
import { readBody } from '../../receivers/body.js';
import { Header } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { FLOOR_DELIVERY_HEADER, FLOOR_PATH, FLOOR_RANGES_HEADER } from './load.js';

const config = parseConfig(JSON.parse(process.argv[2] ?? '{}'), {});
const logger = createLogger({ level: 'warn', destination: process.stderr });
const stream = await openStream(config, logger);
const topics = await ensureHooklogTopics(stream, config);
collectProcessMetrics(); // the bench reads this process's CPU seconds from /metrics
const app = createApp({ config, stream, topics, probes: [], logger });
const hook = config.event_hooks[0]!;

async function floor(req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    const body = await readBody(req, config.server.body_limit_bytes);
    const ranges = String(req.headers[FLOOR_RANGES_HEADER]).split(',').map(Number);
    const headers = {
      [Header.org]: hook.org,
      [Header.source]: 'hook',
      [Header.hookId]: hook.id,
      [Header.receivedAt]: new Date().toISOString(),
      [Header.deliveryId]: String(req.headers[FLOOR_DELIVERY_HEADER]),
    };
    const records: StreamRecord[] = [];
    for (let i = 0; i < ranges.length; i += 2)
      records.push({ key: hook.org, value: body.subarray(ranges[i], ranges[i + 1]), headers });
    await stream.append(topics.logs, records);
    res.writeHead(204).end();
  } catch {
    res.writeHead(503).end();
  }
}

const callback = app.callback();
const server = createServer(
  {
    headersTimeout: config.server.headers_timeout_ms,
    requestTimeout: config.server.request_timeout_ms,
    keepAliveTimeout: 30_000,
  },
  (req, res) => (req.url === FLOOR_PATH ? void floor(req, res) : callback(req, res)),
);
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, topics })}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void stream.close().finally(() => process.exit(0));
});
