/**
 * How the ClickHouse sink writes `<prefix>.identity` into `{db}.identity_users`
 * (schemas/clickhouse/036_identity_users.sql), through its `extraPipelines` like the legacy events: the mapping
 * lives with the component that writes the record, the sink brings the guarantees. A user record becomes a row
 * (deleted = 0); a tombstone (an empty value under a user's key) a row with deleted = 1, which FINAL leaves out.
 * `version` is the record's offset: a key's records are on one partition, in order.
 */
import type { ExtraPipeline, MapResult } from '../../platform/store/table-writer.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { formatDateTime64, parseTimestamp } from '../../platform/time.js';
import { identityKey, identityUserSchema } from '../../schemas/identity.js';

/** One row of `{db}.identity_users`; `ingested_at` is the table's default. */
export interface IdentityUserRow {
  org: string;
  user_id: string;
  login: string;
  status: string;
  group_ids: string[];
  group_names: string[];
  admin_roles: string[];
  truncated: boolean;
  last_updated: string | null;
  synced_at: string;
  deleted: number;
  version: number;
}

/** `<org>/user/<id>`: org ids hold no `/` (orgSlug), so the first `/user/` ends the org. */
function splitKey(key: string | null): { org: string; userId: string } | null {
  if (key === null) return null;
  const at = key.indexOf('/user/');
  if (at <= 0 || at + 6 >= key.length) return null;
  return { org: key.slice(0, at), userId: key.slice(at + 6) };
}

export function mapIdentityRecord(rec: ConsumedRecord): MapResult<IdentityUserRow> {
  if (rec.value.length === 0) {
    const k = splitKey(rec.key);
    if (!k) return { ok: false, reason: 'tombstone whose key is not <org>/user/<id>' };
    const at = formatDateTime64(rec.timestamp);
    return {
      ok: true,
      row: {
        org: k.org,
        user_id: k.userId,
        login: '',
        status: '',
        group_ids: [],
        group_names: [],
        admin_roles: [],
        truncated: false,
        last_updated: null,
        synced_at: at,
        deleted: 1,
        version: rec.offset,
      },
    };
  }
  let v: unknown;
  try {
    v = JSON.parse(rec.value.toString('utf8'));
  } catch {
    return { ok: false, reason: 'value is not valid JSON' };
  }
  const parsed = identityUserSchema.safeParse(v);
  if (!parsed.success)
    return {
      ok: false,
      reason: `not an identity user: ${parsed.error.issues
        .slice(0, 5)
        .map((i) => `${i.path.join('.')}: ${i.message}`)
        .join('; ')}`,
    };
  const u = parsed.data;
  if (rec.key !== identityKey(u.org, u.user_id))
    return { ok: false, reason: 'the key is not the identity key of the value’s org and user_id' };
  const synced = parseTimestamp(u.synced_at);
  if (synced === null) return { ok: false, reason: 'synced_at is not a timestamp' };
  const updated = parseTimestamp(u.last_updated);
  return {
    ok: true,
    row: {
      org: u.org,
      user_id: u.user_id,
      login: u.login ?? '',
      status: u.status,
      group_ids: u.groups.map((g) => g.id),
      group_names: u.groups.map((g) => g.name),
      admin_roles: u.admin_roles,
      truncated: u.truncated,
      last_updated: updated === null ? null : formatDateTime64(updated),
      synced_at: formatDateTime64(synced),
      deleted: 0,
      version: rec.offset,
    },
  };
}

/** The sink pipeline for the identity topic: group `<sink group>.identity`, table identity_users. */
export function identityPipeline(topic: string): ExtraPipeline {
  return {
    name: 'identity',
    topic,
    table: 'identity_users',
    map: mapIdentityRecord,
    onReject: 'deadletter',
    // The Kafka stream's sync records (platform/stream/kafka/table.ts: a NUL-led key, null value) are no user.
    skip: (rec) => rec.key === null || rec.key.startsWith('\u0000'),
  };
}
