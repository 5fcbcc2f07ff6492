export { eventsPipeline, startClickHouseSink, type ClickHouseSink, type ClickHouseSinkOptions } from './sink.js';
