export { startClickHouseSink, type ClickHouseSink, type ClickHouseSinkOptions, type ExtraPipeline } from './sink.js';
export {
  mapEventRecord,
  mapDeadletterRecord,
  dedupToken,
  parseTimestamp,
  formatDateTime64,
  type EventRow,
  type DeadletterRow,
  type MapResult,
} from './rows.js';
export { num, obj, objects, parseObject, str, type Obj } from './json.js';
export { ORIGIN as SINK_ORIGIN } from './writer.js';
export type { SinkCounters } from './telemetry.js';
