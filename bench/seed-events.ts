/** The GET /events benchmark's data: many events seeded with SQL, with counters that match them. */
import type { PrismaClient } from '@herald/db/prisma';

/** Events created in the seed for merchant m0 with origin api and objectType payment. */
export function filteredCount(total: number): number {
  let n = 0;
  for (let i = 0; i < total; i += 12) if (Math.floor(i / 12) % 8 === 6) n += 1;
  return n;
}

const SEED_OBJECT_TYPES = "ARRAY['subscription','subscription.plan','billing-cycle','payment-series','transactions','manual-retry','payment','refund']";

/** Whose events a seed stores: a program and its merchants `${merchantPrefix}0` to `${merchantPrefix}${merchants - 1}`, which must exist. */
export interface SeedTenant {
  programId: string;
  merchantPrefix: string;
  merchants: number;
}

/**
 * Seeds `total` events in one INSERT ... SELECT generate_series, then fills event_counts and
 * event_bucket_counts from them exactly as the statement of countsStatement would have (scopes program and merchant,
 * origin any/one x objectType any/one, buckets of a day, a minute and a second): deep pages and
 * counts read those counters, so they must match the rows. Events are `spacingMs` apart (default
 * 5 ms: dense, so that the per-second buckets stay few, 200 a second), spread over the
 * tenant's merchants (4 by default), origins cycling every event and object types every 12 events.
 */
export async function seedEvents(
  prisma: PrismaClient,
  total: number,
  tenant: SeedTenant = { programId: 'bench-l', merchantPrefix: 'bench-l-m', merchants: 4 },
  spacingMs = 5,
): Promise<void> {
  // Ids and numbers from the bench's and the faults' own constants, never from outside: safe to
  // write into the statement.
  const { programId, merchantPrefix, merchants } = tenant;
  if (!(spacingMs > 0)) throw new Error(`seedEvents: spacingMs must be a positive number of ms, got ${spacingMs}`);
  await prisma.$executeRawUnsafe(`
    INSERT INTO events (id, program_id, merchant_id, created_at, origin, event_type, object_id, object_type, sequence, content_hash)
    SELECT 'Event-' || gen_random_uuid(), '${programId}', '${merchantPrefix}' || (i % ${merchants}),
           timestamptz '2026-01-01T00:00:00Z' + i * interval '${spacingMs} milliseconds',
           (ARRAY['api','widget','automated'])[1 + i % 3], 'created', 'obj-' || i,
           -- Each event the only one of its object: the bench reads pages, never an object's order.
           (${SEED_OBJECT_TYPES})[1 + (i / 12) % 8], 1, md5(i::text)
    FROM generate_series(0, ${total - 1}) AS i`);
  const expanded = `
    FROM events e
    CROSS JOIN LATERAL (VALUES ('program:' || e.program_id), ('merchant:' || e.merchant_id)) s(scope)
    CROSS JOIN LATERAL (VALUES (''), (e.origin)) o(origin)
    CROSS JOIN LATERAL (VALUES (''), (e.object_type)) t(object_type)`;
  await prisma.$executeRawUnsafe(`
    INSERT INTO event_counts (scope, origin, object_type, count)
    SELECT s.scope, o.origin, t.object_type, count(*) ${expanded}
    WHERE e.program_id = '${programId}' AND s.scope IS NOT NULL
    GROUP BY 1, 2, 3
    ON CONFLICT (scope, origin, object_type) DO UPDATE SET count = event_counts.count + EXCLUDED.count`);
  await prisma.$executeRawUnsafe(`
    INSERT INTO event_bucket_counts (scope, origin, object_type, granularity, bucket_start, count)
    SELECT s.scope, o.origin, t.object_type, g.granularity,
           floor(extract(epoch FROM e.created_at))::bigint - (floor(extract(epoch FROM e.created_at))::bigint % g.granularity), count(*)
    ${expanded}
    CROSS JOIN (VALUES (86400), (60), (1)) g(granularity)
    WHERE e.program_id = '${programId}' AND s.scope IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5
    ON CONFLICT (scope, origin, object_type, granularity, bucket_start) DO UPDATE SET count = event_bucket_counts.count + EXCLUDED.count`);
  // As autovacuum leaves a table that grew over time: every row visible to all and its hint bits
  // set. Without it the first reads of a bulk-inserted table write every page they touch.
  await prisma.$executeRawUnsafe('VACUUM (ANALYZE) events');
  await prisma.$executeRawUnsafe('ANALYZE event_bucket_counts');
}
