import { pino, type Logger, type LoggerOptions } from 'pino';
import pretty from 'pino-pretty';
import { redactSecrets } from './config/secrets.js';
import { LogRepeats } from './log-repeats.js';

/**
 * Secrets reach log calls in config (hook secrets, API tokens, private keys,
 * at any depth and inside arrays) and in request headers. pino's path redaction
 * has no recursive wildcard, so every log object goes through the same deep
 * key-name redaction that `hooklog check-config` prints with; header paths are
 * redacted by name too. Receivers never bind request headers in the first
 * place (hook auth headers have configurable names): this is the backstop.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
];

export type { Logger };

const MAX_CAUSE_DEPTH = 8;

/**
 * The `err` serializer: type, message and stack, every own field (HooklogError's `code` and
 * `retriable`, a driver's error code), and the `cause` chain as nested errors, each with its own code,
 * so an operator sees which failure underlies which. Log errors as `log.warn({ err }, 'msg')`.
 */
export function serializeError(err: unknown, depth = 0): unknown {
  if (!(err instanceof Error)) return err;
  const out: Record<string, unknown> = { type: err.constructor?.name ?? err.name, message: err.message };
  for (const [k, v] of Object.entries(err)) if (k !== 'cause') out[k] = v;
  out['stack'] = err.stack;
  if (err instanceof AggregateError) out['errors'] = err.errors.map((e) => serializeError(e, depth + 1));
  if (err.cause !== undefined)
    out['cause'] = depth < MAX_CAUSE_DEPTH ? serializeError(err.cause, depth + 1) : '[cause chain too deep]';
  return out;
}

/** `pretty`: human-readable lines; `json`: one JSON object per line; `auto`: pretty on a terminal, else JSON. */
export type LogFormat = 'auto' | 'pretty' | 'json';

/** What `auto` means for a destination: a terminal gets pretty lines, a pipe or file gets JSON lines. */
export function resolveLogFormat(format: LogFormat, destination: NodeJS.WritableStream): 'pretty' | 'json' {
  if (format !== 'auto') return format;
  return (destination as NodeJS.WritableStream & { isTTY?: boolean }).isTTY === true ? 'pretty' : 'json';
}

/** How often a repeated warning is summarised by default (config: `log.repeat_interval_s`). */
export const DEFAULT_REPEAT_INTERVAL_S = 10;

export function createLogger(
  opts: {
    level?: string;
    destination?: NodeJS.WritableStream;
    format?: LogFormat;
    /** A repeated warning or error is written once, then summarised every this many seconds; 0 writes them all. */
    repeatIntervalS?: number;
    /** The repeat filter's clock, for tests. */
    now?: () => number;
  } = {},
): Logger & { readonly repeats: LogRepeats } {
  const destination = opts.destination ?? process.stdout;
  const repeats = new LogRepeats({
    intervalMs: (opts.repeatIntervalS ?? DEFAULT_REPEAT_INTERVAL_S) * 1000,
    ...(opts.now ? { now: opts.now } : {}),
  });
  const options: LoggerOptions = {
    level: opts.level ?? process.env.HOOKLOG_LOG_LEVEL ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    formatters: { log: (obj) => redactSecrets(obj) as Record<string, unknown> },
    serializers: { err: serializeError },
    base: { service: 'hooklog' },
    timestamp: pino.stdTimeFunctions.isoTime,
    hooks: {
      // One place for every component (kafkajs's adapter, the stream's retry paths, the sink, pollers): a line
      // repeating one written less than an interval ago is counted, not written (log-repeats.ts).
      logMethod(args, method, level) {
        // Info and debug lines (the hot paths) go straight through, without reading the bindings.
        if (!repeats.filters(level)) return method.apply(this, args);
        const [obj, msg] = logArgs(args);
        const write = (o: Record<string, unknown>, m: string) =>
          method.apply(this, [o, m] as Parameters<typeof method>);
        if (repeats.admit(level, this.bindings(), obj, msg, write)) method.apply(this, args);
      },
    },
  };
  // Summaries fall due while nothing else is logged (and a repeat stops by going quiet): a sweep each second,
  // unref'd so it never keeps a process alive.
  if (opts.repeatIntervalS !== 0 && !opts.now) setInterval(() => repeats.sweep(), 1000).unref();
  return Object.assign(build(options, destination, opts.format), { repeats });
}

/** A log call's arguments as pino reads them: `(obj, msg)`, `(err, msg)` or `(msg)`. */
function logArgs(args: readonly unknown[]): [Record<string, unknown>, string] {
  const [first, second] = args;
  if (typeof first === 'string') return [{}, first];
  if (first instanceof Error) return [{ err: first }, typeof second === 'string' ? second : first.message];
  const obj = first !== null && typeof first === 'object' ? (first as Record<string, unknown>) : {};
  return [obj, typeof second === 'string' ? second : ''];
}

function build(options: LoggerOptions, destination: NodeJS.WritableStream, format: LogFormat | undefined): Logger {
  if (resolveLogFormat(format ?? 'auto', destination) === 'pretty') {
    // Secrets are redacted above (formatters.log and redact run before any output), so the pretty
    // printer only ever sees redacted objects. Synchronous: no worker thread to lose lines at exit.
    const colorize = (destination as NodeJS.WritableStream & { isTTY?: boolean }).isTTY === true;
    return pino(
      options,
      pretty({ destination, colorize, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'service' }),
    );
  }
  return destination !== process.stdout ? pino(options, destination as pino.DestinationStream) : pino(options);
}

/** A logger that discards everything: for tests and benches that assert on data, not logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
