import { Client } from 'pg';
import request from 'supertest';
import { useMigratedDatabase, waitFor } from '@herald/testing';
import { createTestApi, type TestApi } from './support/api';
import { ingestEvent, seconds } from './support/events';

// No single API key can take the database from the others: each GET /events statement has a time
// limit, a page found by skipping may skip a bounded number of events, one key runs a bounded
// number of GET /events at once, and /readyz and the ingest have connections of their own.
// Each describe has its own events-api; the locks these tests take are on a database of this file's own.
const database = useMigratedDatabase('herald_query_bounds');

type Tenant = Awaited<ReturnType<TestApi['createTenant']>>;

/** A connection of the test's own, outside every pool of the API. */
async function connect(): Promise<Client> {
  const client = new Client({ connectionString: database.url });
  await client.connect();
  return client;
}

/**
 * Takes an ACCESS EXCLUSIVE lock on the events table until `release`: every GET /events statement
 * then waits, as a slow one would, holding its connection and its key's turn.
 */
async function lockEvents(): Promise<{ release: () => Promise<void> }> {
  const client = await connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
  return {
    release: async () => {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

/** Resolves once `count` statements of the pool named `applicationName` wait on a lock. */
async function waitForBlocked(applicationName: string, count: number): Promise<void> {
  const client = await connect();
  try {
    const waiting = async (): Promise<number> =>
      (
        await client.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'",
          [applicationName],
        )
      ).rows[0]!.n;
    await waitFor(waiting, (n) => n >= count, 20_000, `${count} statements of ${applicationName} waiting on a lock`);
  } finally {
    await client.end();
  }
}

async function seedEvents(api: TestApi, tenant: Tenant, count: number): Promise<void> {
  const createdAt = seconds(count);
  await api.ingest({ events: createdAt.map((at, i) => ingestEvent(tenant, { createdAt: at, eventType: i % 2 === 0 ? 'created' : 'updated' })) }).expect(201);
}

describe('the statement time limit of merchant reads', () => {
  let api: TestApi;
  let tenant: Tenant;
  beforeAll(async () => {
    api = createTestApi({ DATABASE_URL: database.url, MERCHANT_READS_STATEMENT_TIMEOUT_MS: '300' });
    tenant = await api.createTenant();
    await seedEvents(api, tenant, 5);
  });
  afterAll(() => api.close());

  it('answers a GET /events whose query runs past it with 503 problem+json query_timeout and Retry-After, never a 500', async () => {
    const lock = await lockEvents();
    try {
      const res = await api.listEvents(tenant.merchantKey.key, { createdFrom: '2025-01-01T00:00:00Z' });
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body).toMatchObject({ type: '/problems/query_timeout', status: 503 });
      expect(res.body.detail).toMatch(/createdFrom/);
      expect(api.logs()).toMatch(/query cancelled at its statement time limit/);
    } finally {
      await lock.release();
    }
    // The pool's connection was not spoiled by the cancellation.
    const after = await api.listEvents(tenant.merchantKey.key, { createdFrom: '2025-01-01T00:00:00Z' });
    expect(after.status).toBe(200);
    expect(after.body.count).toBe(5);
  });
});

describe('the statement time limit of the ingest', () => {
  let api: TestApi;
  let tenant: Tenant;
  beforeAll(async () => {
    api = createTestApi({ DATABASE_URL: database.url, INGEST_STATEMENT_TIMEOUT_MS: '300' });
    tenant = await api.createTenant();
  });
  afterAll(() => api.close());

  it('answers an ingest whose statement runs past it with 503 problem+json query_timeout, and stores nothing of it', async () => {
    const event = ingestEvent(tenant);
    const lock = await lockEvents();
    try {
      const res = await api.ingest(event);
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body).toMatchObject({ type: '/problems/query_timeout', status: 503 });
    } finally {
      await lock.release();
    }
    // Rolled back: the producer's retry stores it.
    await api.ingest(event).expect(201);
    const listed = await api.listEvents(tenant.merchantKey.key);
    expect(listed.body.count).toBe(1);
  });
});

describe('the bound on the events a page may skip', () => {
  let api: TestApi;
  let tenant: Tenant;
  beforeAll(async () => {
    api = createTestApi({ DATABASE_URL: database.url, EVENTS_MAX_SKIP: '100' });
    tenant = await api.createTenant();
    // Every other one is eventType created: 120 of them.
    await seedEvents(api, tenant, 240);
  });
  afterAll(() => api.close());

  it.each([
    ['eventType', { eventType: 'created' }],
    ['objectId', { objectId: 'obj-1' }],
    ['eventType and createdFrom', { eventType: 'created', createdFrom: '1970-01-01T00:00:00Z' }],
  ])('refuses a page under %s that would skip more with 400 problem+json naming page and how to narrow', async (_name, filter) => {
    const res = await api.listEvents(tenant.merchantKey.key, { ...filter, page: 12, pageSize: 10 });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ type: '/problems/page_too_deep', status: 400, maxSkip: 100, errors: [{ parameter: 'page' }] });
    expect(res.body.errors[0].message).toMatch(/at most 11 with pageSize 10/);
    expect(res.body.detail).toMatch(/createdFrom/);
  });

  it('serves the deepest page within the bound', async () => {
    const res = await api.listEvents(tenant.merchantKey.key, { eventType: 'created', page: 11, pageSize: 10 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ page: 11, count: 120, totalPages: 12 });
    expect(res.body.data).toHaveLength(10);
  });

  it('lets a reader go past it by moving createdFrom, from page 1 again', async () => {
    const first = await api.listEvents(tenant.merchantKey.key, { eventType: 'created', page: 11, pageSize: 10 });
    const last = first.body.data[9].createdAt as string;
    const next = await api.listEvents(tenant.merchantKey.key, {
      eventType: 'created',
      createdFrom: new Date(Date.parse(last) + 1).toISOString(),
      page: 1,
      pageSize: 10,
    });
    expect(next.status).toBe(200);
    expect(next.body.count).toBe(10);
  });

  it.each([
    ['origin', { origin: 'api' }],
    ['createdFrom and createdTo', { createdFrom: '1970-01-01T00:00:00Z', createdTo: '2999-01-01T00:00:00Z' }],
  ])('does not bound the pages under %s, which the counters find at any depth', async (_name, filter) => {
    const deep = await api.listEvents(tenant.merchantKey.key, { ...filter, page: 9999, pageSize: 100 });
    expect(deep.status).toBe(200);
    expect(deep.body).toMatchObject({ page: 9999, count: 240, data: [] });
    const last = await api.listEvents(tenant.merchantKey.key, { ...filter, page: 24, pageSize: 10 });
    expect(last.body.data).toHaveLength(10);
  });
});

describe('the concurrency of one key’s expensive GET /events', () => {
  // eventType is counted and paged over the index: an expensive read.
  const EXPENSIVE = { eventType: 'created' };

  describe('refusing at once', () => {
    let api: TestApi;
    let tenant: Tenant;
    let other: Tenant;
    beforeAll(async () => {
      api = createTestApi({ DATABASE_URL: database.url, MERCHANT_READS_POOL_SIZE: '4', EVENTS_CONCURRENCY_PER_KEY: '1', EVENTS_QUEUE_WAIT_MS: '0' });
      tenant = await api.createTenant();
      other = await api.createTenant();
      await seedEvents(api, tenant, 3);
      await seedEvents(api, other, 2);
    });
    afterAll(() => api.close());

    it('answers a key’s request over its limit with 429 problem+json and Retry-After, and serves other keys meanwhile', async () => {
      const lock = await lockEvents();
      let running: Promise<request.Response> | undefined;
      let otherRunning: Promise<request.Response> | undefined;
      let cheapRunning: Promise<request.Response> | undefined;
      try {
        // .then() sends the request now; its answer waits for the lock.
        running = api.listEvents(tenant.merchantKey.key, EXPENSIVE).then((r) => r);
        await waitForBlocked('herald-api:merchant-reads', 1);

        const refused = await api.listEvents(tenant.merchantKey.key, EXPENSIVE);
        expect(refused.status).toBe(429);
        expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(refused.headers['retry-after']).toBe('1');
        expect(refused.body).toMatchObject({ type: '/problems/too_many_concurrent_requests', status: 429 });

        // A read bounded in time walks the counters over its span: it takes a turn too.
        const bounded = await api.listEvents(tenant.merchantKey.key, { createdFrom: '2025-01-01T00:00:00Z' });
        expect(bounded.status).toBe(429);
        expect((await api.listEvents(tenant.merchantKey.key, { createdTo: '2100-01-01T00:00:00Z' })).status).toBe(429);

        // Another key is not refused, nor a cheap read (found through the counters) of the same key.
        otherRunning = api.listEvents(other.merchantKey.key, EXPENSIVE).then((r) => r);
        cheapRunning = api.listEvents(tenant.merchantKey.key, { objectType: 'payment' }).then((r) => r);
        await waitForBlocked('herald-api:merchant-reads', 3);
      } finally {
        await lock.release();
      }
      expect((await running).status).toBe(200);
      const answered = await otherRunning;
      expect(answered.status).toBe(200);
      expect(answered.body.count).toBe(1);
      const cheap = await cheapRunning;
      expect(cheap.status).toBe(200);
      expect(cheap.body.count).toBe(3);
      // The turn was given back: the key is served again.
      expect((await api.listEvents(tenant.merchantKey.key, EXPENSIVE)).status).toBe(200);
    });

    it('answers a bad query with its 400 without taking a turn', async () => {
      const lock = await lockEvents();
      let running: Promise<request.Response> | undefined;
      try {
        running = api.listEvents(tenant.merchantKey.key, EXPENSIVE).then((r) => r);
        await waitForBlocked('herald-api:merchant-reads', 1);
        const bad = await api.listEvents(tenant.merchantKey.key, { ...EXPENSIVE, pageSize: 500 });
        expect(bad.status).toBe(400);
        expect(bad.body.errors[0].parameter).toBe('pageSize');
      } finally {
        await lock.release();
      }
      expect((await running).status).toBe(200);
    });
  });

  describe('the turns of every key together (EVENTS_EXPENSIVE_CONCURRENCY)', () => {
    let api: TestApi;
    let tenant: Tenant;
    let other: Tenant;
    beforeAll(async () => {
      api = createTestApi({ DATABASE_URL: database.url, MERCHANT_READS_POOL_SIZE: '4', EVENTS_EXPENSIVE_CONCURRENCY: '1', EVENTS_QUEUE_WAIT_MS: '0' });
      tenant = await api.createTenant();
      other = await api.createTenant();
      await seedEvents(api, tenant, 3);
      await seedEvents(api, other, 2);
    });
    afterAll(() => api.close());

    it('refuses another key’s expensive read with 429 while the process’s turns are taken, and serves its cheap reads and bad values as before', async () => {
      const lock = await lockEvents();
      let running: Promise<request.Response> | undefined;
      let cheapRunning: Promise<request.Response> | undefined;
      try {
        running = api.listEvents(tenant.merchantKey.key, EXPENSIVE).then((r) => r);
        await waitForBlocked('herald-api:merchant-reads', 1);

        const refused = await api.listEvents(other.merchantKey.key, EXPENSIVE);
        expect(refused.status).toBe(429);
        expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(refused.headers['retry-after']).toBe('1');
        expect(refused.body).toMatchObject({ type: '/problems/too_many_concurrent_requests', status: 429 });
        expect(refused.body.detail).toMatch(/run at once on this server/);

        const bad = await api.listEvents(other.merchantKey.key, { ...EXPENSIVE, pageSize: 500 });
        expect(bad.status).toBe(400);
        expect(bad.body.errors[0].parameter).toBe('pageSize');

        // A cheap read takes no turn: it runs beside the expensive one.
        cheapRunning = api.listEvents(other.merchantKey.key).then((r) => r);
        await waitForBlocked('herald-api:merchant-reads', 2);
      } finally {
        await lock.release();
      }
      expect((await running).status).toBe(200);
      expect((await cheapRunning)?.body.count).toBe(2);
      const served = await api.listEvents(other.merchantKey.key, EXPENSIVE);
      expect(served.status).toBe(200);
      expect(served.body.count).toBe(1);
    });
  });

  describe('the database time of one key (EVENTS_EXPENSIVE_MS_PER_SECOND)', () => {
    let api: TestApi;
    let tenant: Tenant;
    let other: Tenant;
    beforeAll(async () => {
      // A key may save up 300 ms (the statement limit) and earns 1 ms a second back.
      api = createTestApi({ DATABASE_URL: database.url, MERCHANT_READS_STATEMENT_TIMEOUT_MS: '300', EVENTS_EXPENSIVE_MS_PER_SECOND: '1' });
      tenant = await api.createTenant();
      other = await api.createTenant();
      await seedEvents(api, tenant, 3);
      await seedEvents(api, other, 2);
    });
    afterAll(() => api.close());

    it('refuses a key whose expensive reads used up its time with 429 and Retry-After, and serves its cheap reads and other keys', async () => {
      const lock = await lockEvents();
      let slow: request.Response;
      try {
        // Waits on the lock until PostgreSQL cancels it: 300 ms of this key's time, failed or not.
        slow = await api.listEvents(tenant.merchantKey.key, EXPENSIVE);
      } finally {
        await lock.release();
      }
      expect(slow.status).toBe(503);
      const refused = await api.listEvents(tenant.merchantKey.key, EXPENSIVE);
      expect(refused.status).toBe(429);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.body).toMatchObject({ type: '/problems/query_time_exceeded', status: 429 });
      const bad = await api.listEvents(tenant.merchantKey.key, { ...EXPENSIVE, page: 0 });
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0].parameter).toBe('page');
      expect((await api.listEvents(tenant.merchantKey.key)).body.count).toBe(3);
      expect((await api.listEvents(other.merchantKey.key, EXPENSIVE)).body.count).toBe(1);
      // The key's delivery history spends the same budget: a key cannot double it over two routes.
      const history = await api.merchantGet(tenant.merchantKey.key, '/deliveries');
      expect(history.status).toBe(429);
      expect(history.body).toMatchObject({ type: '/problems/query_time_exceeded', status: 429 });
      expect((await api.merchantGet(other.merchantKey.key, '/deliveries')).status).toBe(200);
    });
  });

  describe('waiting for a turn', () => {
    let api: TestApi;
    let tenant: Tenant;
    beforeAll(async () => {
      api = createTestApi({ DATABASE_URL: database.url, MERCHANT_READS_POOL_SIZE: '3', EVENTS_CONCURRENCY_PER_KEY: '1', EVENTS_QUEUE_WAIT_MS: '20000' });
      tenant = await api.createTenant();
      await seedEvents(api, tenant, 3);
    });
    afterAll(() => api.close());

    it('serves a key’s request over its limit once a turn frees up within EVENTS_QUEUE_WAIT_MS, never two of its queries at once', async () => {
      const lock = await lockEvents();
      const answers: Array<Promise<request.Response>> = [];
      try {
        answers.push(api.listEvents(tenant.merchantKey.key, EXPENSIVE).then((r) => r));
        await waitForBlocked('herald-api:merchant-reads', 1);
        answers.push(api.listEvents(tenant.merchantKey.key, EXPENSIVE).then((r) => r));
        answers.push(api.listEvents(tenant.merchantKey.key, EXPENSIVE).then((r) => r));
        // Queued in the API, not in PostgreSQL: a second statement of this key never waits there.
        const probe = await connect();
        try {
          const { rows } = await probe.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'herald-api:merchant-reads' AND state = 'active'",
          );
          expect(rows[0]!.n).toBe(1);
        } finally {
          await probe.end();
        }
      } finally {
        await lock.release();
      }
      for (const answer of await Promise.all(answers)) expect(answer.status).toBe(200);
    });
  });
});

describe('/readyz, the ingest and the admin API while merchant reads hold every connection of their pool', () => {
  let api: TestApi;
  let tenant: Tenant;
  beforeAll(async () => {
    api = createTestApi({ DATABASE_URL: database.url, MERCHANT_READS_POOL_SIZE: '3', MERCHANT_READS_STATEMENT_TIMEOUT_MS: '60000' });
    tenant = await api.createTenant();
  });
  afterAll(() => api.close());

  it('still answers /readyz 200, ingests with 201 and serves the admin API', async () => {
    // Every connection of the merchant reads pool runs a statement that waits on a lock the test
    // holds, as the slow reads of busy keys would (with the single pool of before, /readyz and the
    // ingest waited for a connection, then failed with 503).
    const holder = await connect();
    await holder.query('SELECT pg_advisory_lock(4242)');
    const held = Array.from({ length: 3 }, () => api.databases.merchantReads.query('SELECT pg_advisory_xact_lock(4242)::text AS locked').then(() => undefined));
    try {
      await waitForBlocked('herald-api:merchant-reads', 3);

      const ready = await request(api.app).get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.checks.postgres).toEqual({ status: 'up' });
      await api.ingest(ingestEvent(tenant)).expect(201);
      await api.admin('post', '/programs').send({ name: 'Another program' }).expect(201);
      // Still held: nothing above waited for them.
      await waitForBlocked('herald-api:merchant-reads', 3);
    } finally {
      await holder.query('SELECT pg_advisory_unlock(4242)');
      await holder.end();
    }
    await Promise.all(held);
  });
});
