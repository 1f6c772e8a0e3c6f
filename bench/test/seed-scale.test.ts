import pg from 'pg';
// The ingest's own counting, as the oracle: the seed must leave the counters it would have left.
import { countsStatement } from '@herald/db';
import { useMigratedDatabase } from '@herald/testing';
import { merchantShare, seedScaleEvents, type ScaleTenant } from '../seed-scale';

// The seed drops and rebuilds the indexes and foreign keys of events: a database of this file's own.
const database = useMigratedDatabase('herald_seed_scale');
const TENANT: ScaleTenant = { programId: 'scale-p', merchantPrefix: 'scale-m', merchants: 3 };
const COUNTERS = `
  SELECT scope, origin, object_type, NULL AS granularity, NULL AS bucket_start, count::text FROM event_counts
  UNION ALL
  SELECT scope, origin, object_type, granularity, bucket_start::text, count::text FROM event_bucket_counts
  ORDER BY 1, 2, 3, 4, 5`;
const SHAPE_OF_EVENTS = `
  SELECT pg_get_indexdef(indexrelid) AS definition FROM pg_index WHERE indrelid = 'events'::regclass
  UNION ALL
  SELECT conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'events'::regclass OR confrelid = 'events'::regclass
  ORDER BY 1`;

describe('seedScaleEvents', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query('INSERT INTO programs (id, name) VALUES ($1, $1)', [TENANT.programId]);
    for (let m = 0; m < TENANT.merchants; m += 1)
      await client.query('INSERT INTO merchants (id, program_id, name) VALUES ($1, $2, $1)', [`${TENANT.merchantPrefix}${m}`, TENANT.programId]);
  });
  afterAll(() => client.end());

  it('leaves the counters the ingest would have made of the stored events, over two seeds, and events as it found them', async () => {
    const shape = (await client.query(SHAPE_OF_EVENTS)).rows;
    const now = new Date('2026-11-20T10:00:00Z');
    const log = (): void => undefined;
    await seedScaleEvents(client, { tenant: TENANT, count: 3_001, now, days: 30, burstHour: 9, log });
    await seedScaleEvents(client, { tenant: TENANT, count: 5_000, now, days: 30, burstHour: 12, log });

    const seeded = (await client.query(COUNTERS)).rows;
    await client.query('DELETE FROM event_counts');
    await client.query('DELETE FROM event_bucket_counts');
    const { rows } = await client.query<{ programId: string; merchantId: string | null; origin: string; objectType: string; createdAt: Date }>(
      'SELECT program_id AS "programId", merchant_id AS "merchantId", origin, object_type AS "objectType", created_at AS "createdAt" FROM events',
    );
    const counting = countsStatement(rows.map((r) => ({ ...r, merchantId: r.merchantId ?? undefined })))!.compile();
    await client.query(counting.sql, [...counting.parameters]);
    expect(seeded).toEqual((await client.query(COUNTERS)).rows);

    expect(rows).toHaveLength(8_001);
    const owned = (merchantId: string | null): number => rows.filter((r) => r.merchantId === merchantId).length;
    expect(owned('scale-m1')).toBe(merchantShare(3_001, TENANT, 1) + merchantShare(5_000, TENANT, 1));
    expect(owned(null)).toBeGreaterThan(0);
    expect(new Set(rows.map((r) => r.createdAt.toISOString().slice(0, 10))).size).toBe(30);
    expect((await client.query(SHAPE_OF_EVENTS)).rows).toEqual(shape);
  });
});
