export { sinkGroup, startClickHouseSink, type ClickHouseSink, type ClickHouseSinkOptions } from './sink.js';
