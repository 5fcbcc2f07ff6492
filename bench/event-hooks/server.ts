/**
 * The receiver under test, in a process of its own (so the load generator
 * does not share its event loop): the stream, hooklog's topics and the Koa app
 * exactly as `hooklog start` composes them, without the ClickHouse sink, so the
 * figures are the receiver's. Argument: the hooklog config as JSON. Prints
 * `{"url": ...}` once listening; exits on SIGTERM.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../cli/config/load.js';
import { createLogger } from '../../platform/log.js';
import { collectProcessMetrics } from '../../platform/metrics.js';
import { ensureHooklogTopics, openStream } from '../../platform/stream/open.js';
import { createApp } from '../../cli/app.js';

const config = parseConfig(JSON.parse(process.argv[2] ?? '{}'), {});
const logger = createLogger({ level: 'warn', destination: process.stderr });
const stream = await openStream(config, logger);
const topics = await ensureHooklogTopics(stream, config);
collectProcessMetrics(); // the bench reads this process's CPU seconds from /metrics
const app = createApp({ config, stream, topics, probes: [], logger });
const server = createServer(
  {
    headersTimeout: config.server.headers_timeout_ms,
    requestTimeout: config.server.request_timeout_ms,
    keepAliveTimeout: 30_000,
  },
  app.callback(),
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
