/**
 * The events table every writer and reader names (migration 032: one row per
 * (org, uuid, event_type, published) keeping every known value, one partition
 * per day; read it with FINAL, or through the `events` view). One constant, so
 * the next table version moves everyone.
 */
export const EVENTS_TABLE = 'events_v4';
