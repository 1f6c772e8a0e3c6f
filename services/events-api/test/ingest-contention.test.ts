import pg from 'pg';
import { testDatabaseUrl } from '@herald/testing';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';

const api = createTestApi();
afterAll(() => api.close());

// Every event of a program adds to the same counter rows, so concurrent ingests of one program
// queue on those rows' locks. Under load a wait can last seconds; it must end in a stored event,
// never in a 500 (Prisma's interactive transactions failed after 5 s with P2028: the 500 seen
// once by the bench's end-to-end scenario).
describe('POST /internal/events while another transaction holds the counters', () => {
  it('waits for the lock and stores the event (201), however long the wait', async () => {
    const tenant = await api.createTenant();
    expect((await api.ingest(ingestEvent(tenant))).status).toBe(201);

    const holder = new pg.Client({ connectionString: testDatabaseUrl() });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      const locked = await holder.query('SELECT 1 FROM event_counts WHERE scope = $1 FOR UPDATE', [`program:${tenant.programId}`]);
      expect(locked.rowCount).toBeGreaterThan(0);
      const pending = api.ingest(ingestEvent(tenant)).then((res) => res);
      // The lock held longer than Prisma's default interactive-transaction timeout (5 s): the
      // duration is what the test is about, not a wait for something to happen.
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      await holder.query('COMMIT');
      const res = await pending;
      expect(res.status).toBe(201);
    } finally {
      await holder.end();
    }
    expect(await api.prisma.event.count({ where: { programId: tenant.programId } })).toBe(2);
    const listed = await api.listEvents(tenant.programKey.key);
    expect(listed.body.count).toBe(2);
  }, 30_000);
});
