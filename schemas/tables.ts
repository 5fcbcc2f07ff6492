/**
 * The events table every writer and reader names (migration 011: one row per
 * (org, uuid) keeping every known value; read it with FINAL, or through the
 * `events` view). One constant, so the next table version moves everyone.
 */
export const EVENTS_TABLE = 'events_v3';
