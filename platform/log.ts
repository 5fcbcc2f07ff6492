import { pino, type Logger, type LoggerOptions } from 'pino';
import { redactSecrets } from './config/secrets.js';

/**
 * Secrets reach log calls in config (hook secrets, API tokens, private keys,
 * at any depth and inside arrays) and in request headers. pino's path redaction
 * has no recursive wildcard, so every log object goes through the same deep
 * key-name redaction that `hooklog check-config` prints with; header paths are
 * redacted by name too. Receivers never bind request headers in the first
 * place (hook auth headers have configurable names): this is the backstop.
 */
export const REDACT_PATHS = ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie'];

export type { Logger };

export function createLogger(opts: { level?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? process.env.HOOKLOG_LOG_LEVEL ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    formatters: { log: (obj) => redactSecrets(obj) as Record<string, unknown> },
    base: { service: 'hooklog' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return opts.destination ? pino(options, opts.destination as pino.DestinationStream) : pino(options);
}

/** A logger that discards everything: for tests and benches that assert on data, not logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
