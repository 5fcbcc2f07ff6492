export { startClickHouseSink, type ClickHouseSink, type ClickHouseSinkOptions } from './sink.js';
export { mapEventRecord, mapDeadletterRecord, type EventRow, type DeadletterRow } from './rows.js';
export { ORIGIN as SINK_ORIGIN } from '../../platform/store/table-writer.js';
export type { SinkCounters } from '../../platform/store/table-writer-telemetry.js';
