/**
 * The embedded stream: an fsynced, segmented log in the data directory that
 * implements `Stream` without any server. See embedded-stream.ts for the
 * overview, frame.ts for the on-disk format and log.ts for durability and
 * retention.
 */
export { openEmbeddedStream, EmbeddedStream } from './embedded-stream.js';
