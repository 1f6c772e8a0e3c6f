import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';
import { createFakeWorker, RETRY_DELAY_MS } from './support/fake-worker';

const USERNAME = 'ops';
const PASSWORD = `dashboard-${randomUUID()}`;
const api = createTestApi({ DASHBOARD_USERNAME: USERNAME, DASHBOARD_PASSWORD: PASSWORD });
const worker = createFakeWorker(api);
afterAll(async () => {
  await worker.close();
  await api.close();
});

beforeEach(() => api.deliveryQueue.drain(true));

const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
const AS_OPS = basic(USERNAME, PASSWORD);

/** A dashboard request with the right credentials. */
function dashboard(method: 'get' | 'put' | 'post' | 'patch', path: string) {
  return request(api.app)[method](`/admin/queues${path}`).set('Authorization', AS_OPS);
}

/** The dashboard's JSON view of the deliveries queue, with the jobs of one status. */
async function queueView(status: string) {
  const res = await dashboard('get', `/api/queues?activeQueue=deliveries&status=${status}&page=1&jobsPerPage=50`).expect(200);
  const queue = res.body.queues.find((q: { name: string }) => q.name === 'deliveries');
  return { text: res.text, queue };
}

/** A tenant whose program target uses basic auth with `password`; one event ingested. Returns the event id. */
async function deliveryWithPassword(password: string): Promise<string> {
  const { programId } = await api.createTenant();
  await api
    .admin('put', `/programs/${programId}/notification-target`)
    .send({ url: 'https://program.example/hooks', auth: { mode: 'basic', username: 'shop', password } })
    .expect(200);
  const event = ingestEvent({ programId }, { objectType: 'subscription' });
  await api.ingest(event).expect(201);
  return event.id;
}

describe('the Bull dashboard at /admin/queues', () => {
  it.each(['/', '/api/queues', '/static/nothing.js', '/no-such-page'])('answers %s with 401 and a Basic challenge without credentials', async (path) => {
    const res = await request(api.app).get(`/admin/queues${path}`).expect(401);
    expect(res.headers['www-authenticate']).toBe('Basic realm="Herald dashboard", charset="UTF-8"');
    expect(res.type).toBe('application/problem+json');
  });

  it.each([
    ['a wrong password', basic(USERNAME, 'wrong')],
    ['a wrong user name', basic('admin', PASSWORD)],
    ['the password with a suffix', basic(USERNAME, `${PASSWORD}x`)],
    ['no colon', `Basic ${Buffer.from(USERNAME + PASSWORD).toString('base64')}`],
    ['the admin bearer token', `Bearer ${api.config.adminToken}`],
  ])('answers 401 to %s', async (_case, authorization) => {
    const res = await request(api.app).get('/admin/queues').set('Authorization', authorization).expect(401);
    expect(res.headers['www-authenticate']).toMatch(/^Basic realm=/);
  });

  it('serves the dashboard page with the right credentials', async () => {
    const res = await dashboard('get', '/').expect(200);
    expect(res.type).toBe('text/html');
    expect(res.text).toContain('Herald deliveries');
  });

  it('lists the deliveries queue and its jobs in its JSON API, named for people', async () => {
    const eventId = await deliveryWithPassword(`pw-${randomUUID()}`);
    const { queue } = await queueView('prioritized');
    expect(queue).toMatchObject({ name: 'deliveries', counts: { prioritized: 1 }, allowRetries: true, allowCompletedRetries: false });
    expect(queue.jobs).toHaveLength(1);
    expect(queue.jobs[0].name).toMatch(new RegExp(`^${eventId} -> program `));
    expect(Object.keys(queue.jobs[0].data).sort()).toEqual(['deliveryId', 'eventId', 'merchantId', 'programId', 'storedAt', 'targetId', 'targetOwner']);
  });

  it("names each job by the target's owner and id, so an event's two deliveries read apart", async () => {
    const { programId, merchantId } = await api.createTenant();
    const programTarget = await api
      .admin('put', `/programs/${programId}/notification-target`)
      .send({ url: 'https://program.example/hooks', auth: { mode: 'none' } });
    const merchantTarget = await api
      .admin('put', `/merchants/${merchantId}/notification-target`)
      .send({ url: 'https://shop.example/hooks', auth: { mode: 'none' } });
    const event = ingestEvent({ programId, merchantId }, { objectType: 'payment' });
    await api.ingest(event).expect(201);

    const { queue } = await queueView('prioritized');
    expect(queue.jobs.map((job: { name: string }) => job.name).sort()).toEqual(
      [`${event.id} -> merchant ${merchantId} target ${merchantTarget.body.id}`, `${event.id} -> program ${programId} target ${programTarget.body.id}`].sort(),
    );
  });

  it('shows when a delayed job runs next: the failed attempt plus the backoff', async () => {
    await deliveryWithPassword(`pw-${randomUUID()}`);
    const failedFrom = Date.now();
    const [deliveryId] = await worker.runAll(() => ({ outcome: 'retrying' }));
    const failedBy = Date.now();
    const { queue } = await queueView('delayed');
    expect(queue.jobs.map((job: { id: string }) => job.id)).toEqual([deliveryId]);
    const [job] = queue.jobs as Array<{ timestamp: number; delay: number; opts: { delay?: number } }>;
    // The board shows timestamp + opts.delay as the run time, and "Delay changed; the new run time
    // is currently unknown" whenever delay and opts.delay differ.
    expect(job!.opts.delay).toBe(job!.delay);
    expect(job!.timestamp + job!.delay).toBeGreaterThanOrEqual(failedFrom + RETRY_DELAY_MS);
    expect(job!.timestamp + job!.delay).toBeLessThanOrEqual(failedBy + RETRY_DELAY_MS);

    const single = await dashboard('get', `/api/queues/deliveries/${deliveryId}`).expect(200);
    expect(single.body.job).toMatchObject({ delay: job!.delay, opts: { delay: job!.delay } });
  });

  it("names a delayed job of an ordered target that waits for the previous callback of its object, with that callback's delivery", async () => {
    const { programId } = await api.createTenant();
    await api
      .admin('put', `/programs/${programId}/notification-target`)
      .send({ url: 'https://program.example/hooks', auth: { mode: 'none' }, ordering: 'object' })
      .expect(200);
    const objectId = `sub-${randomUUID()}`;
    for (let i = 0; i < 2; i += 1) await api.ingest(ingestEvent({ programId }, { objectType: 'subscription', objectId })).expect(201);
    const [first, second] = await worker.runAll(() => ({ outcome: 'retrying' }));
    // The worker parks the second behind the first: the database says so (object-order.ts).
    await api.databases.ingest.query('UPDATE deliveries SET waiting_for = $1 WHERE id = $2', [first, second]);

    const { queue } = await queueView('delayed');
    const names = new Map((queue.jobs as Array<{ id: string; name: string }>).map((job) => [job.id, job.name]));
    expect(names.get(second!)).toMatch(new RegExp(`\\(waiting for the previous callback of its object: delivery ${first}\\)$`));
    expect(names.get(first!)).not.toMatch(/waiting for/);
  });

  it('serves a page that links to no other host (no outside fonts)', async () => {
    const res = await dashboard('get', '/').expect(200);
    expect(res.text).not.toMatch(/(href|src)="(https?:)?\/\//);
    expect(res.text).toContain('static/css/');
  });

  it("lets a browser keep bull-board's own files and revalidate them, and keeps the page and its data uncached", async () => {
    const page = await dashboard('get', '/').expect(200);
    expect(page.headers['cache-control']).toBe('no-store');
    expect((await dashboard('get', '/api/queues?activeQueue=deliveries&status=latest&page=1&jobsPerPage=10').expect(200)).headers['cache-control']).toBe(
      'no-store',
    );

    const script = /src="[^"]*?(static\/js\/[^"]+\.js)"/.exec(page.text)![1]!;
    const asset = await dashboard('get', `/${script}`).expect(200);
    expect(asset.headers['cache-control']).toBe('no-cache');
    expect(asset.headers.etag).toBeDefined();
    await dashboard('get', `/${script}`).set('If-None-Match', asset.headers.etag!).expect(304);
  });

  it('retries a failed job: it waits again', async () => {
    await deliveryWithPassword(`pw-${randomUUID()}`);
    const [deliveryId] = await worker.runAll(() => ({ outcome: 'failed' }));
    const { queue } = await queueView('failed');
    expect(queue.jobs.map((job: { id: string }) => job.id)).toEqual([deliveryId]);

    await dashboard('put', `/api/queues/deliveries/${deliveryId}/retry`).expect(204);
    expect(await api.deliveryQueue.getJobState(deliveryId!)).toBe('prioritized');
  });

  it('refuses to retry a completed job, which the worker would not send again', async () => {
    await deliveryWithPassword(`pw-${randomUUID()}`);
    const [deliveryId] = await worker.runAll(() => ({ outcome: 'succeeded' }));
    const res = await dashboard('put', `/api/queues/deliveries/${deliveryId}/retry`).expect(403);
    expect(res.text).toContain('/replay');
    await dashboard('put', '/api/queues/deliveries/retry/completed').expect(403);
    expect(await api.deliveryQueue.getJobState(deliveryId!)).toBe('completed');
  });

  it.each([
    ['post', '/api/queues/deliveries/add'],
    ['put', '/api/queues/deliveries/empty'],
    ['put', '/api/queues/deliveries/obliterate'],
    ['put', '/api/queues/deliveries/clean/wait'],
  ] as const)('refuses %s %s, which would write job data or drop deliveries', async (method, path) => {
    await deliveryWithPassword(`pw-${randomUUID()}`);
    await dashboard(method, path)
      .send({ name: 'x', data: { deliveryId: 'forged' } })
      .expect(403);
    expect(await api.deliveryQueue.getJobCounts('prioritized')).toEqual({ prioritized: 1 });
  });

  it.each([
    ['/api/queues/deliveries/concurrency', { concurrency: 1 }],
    ['/api/queues/deliveries/rate-limit', { max: 1, duration: 60_000 }],
  ])('refuses PUT %s, which would throttle every worker, with a 403 problem+json', async (path, body) => {
    const res = await dashboard('put', path).send(body).expect(403);
    expect(res.type).toBe('application/problem+json');
    expect(res.body).toMatchObject({ status: 403, type: expect.any(String), title: expect.any(String), detail: expect.stringMatching(/WORKER_CONCURRENCY/) });
    expect(await api.deliveryQueue.getGlobalConcurrency()).toBeNull();
  });

  it.each([
    ['a refused action', 'put', '/api/queues/deliveries/obliterate', 403],
    ['an unknown queue', 'get', '/api/queues/nosuchqueue/workers', 404],
    ['an unknown job', 'get', `/api/queues/deliveries/${randomUUID()}`, 404],
    ['an unknown API route', 'get', '/api/nothing-here', 404],
  ] as const)('answers %s with a problem+json', async (_case, method, path, status) => {
    const res = await dashboard(method, path).expect(status);
    expect(res.type).toBe('application/problem+json');
    expect(res.body).toMatchObject({ status, type: expect.any(String), title: expect.any(String) });
  });

  it('pauses and resumes the queue, each logged with the dashboard user and counted', async () => {
    const count = async (action: string) => {
      const text = (await request(api.app).get('/metrics').expect(200)).text;
      return Number(new RegExp(`herald_dashboard_queue_actions_total\\{[^}]*action="${action}"[^}]*\\} (\\d+)`).exec(text)?.[1] ?? NaN);
    };
    const [paused, resumed] = [await count('pause'), await count('resume')];
    await dashboard('put', '/api/queues/deliveries/pause').expect(200);
    expect(await api.deliveryQueue.isPaused()).toBe(true);
    await dashboard('put', '/api/queues/deliveries/resume').expect(200);
    expect(await api.deliveryQueue.isPaused()).toBe(false);
    expect([await count('pause'), await count('resume')]).toEqual([paused + 1, resumed + 1]);
    const lines = api
      .logs()
      .split('\n')
      .filter((line) => line.includes('dashboard: queue'));
    expect(lines).toEqual([
      expect.stringMatching(/"message":"dashboard: queue paused".*"user":"ops"/),
      expect.stringMatching(/"message":"dashboard: queue resumed".*"user":"ops"/),
    ]);
    expect(lines.join('\n')).not.toContain(PASSWORD);
  });

  it.each(['completed', 'failed'])('lets ops clean %s jobs', async (status) => {
    await dashboard('put', `/api/queues/deliveries/clean/${status}`).expect(200);
  });

  it('shows no target password in any job, whatever its state, nor in the logs', async () => {
    const password = `pw-${randomUUID()}`;
    await deliveryWithPassword(password);
    const waiting = await queueView('prioritized');
    await worker.runAll(() => ({ outcome: 'failed' }));
    const failed = await queueView('failed');
    const latest = await queueView('latest');
    const jobId = failed.queue.jobs[0].id as string;
    const job = await dashboard('get', `/api/queues/deliveries/${jobId}`).expect(200);

    const seen = [waiting.text, failed.text, latest.text, job.text, api.logs()].join('\n');
    expect(seen).toContain(jobId);
    expect(seen).not.toContain(password);
    expect(seen).not.toContain(Buffer.from(`shop:${password}`).toString('base64'));
  });

  describe('job edits that could hide a delivery', () => {
    /** A delivery whose first attempt failed: its job waits RETRY_DELAY_MS in the delayed set. */
    async function delayedJob(): Promise<string> {
      await deliveryWithPassword(`pw-${randomUUID()}`);
      await worker.runAll(() => ({ outcome: 'retrying' }));
      const [job] = await api.deliveryQueue.getDelayed();
      return job!.id!;
    }

    it('refuses to move a delayed job years ahead, and the job keeps its run time', async () => {
      const jobId = await delayedJob();
      const before = await api.deliveryQueue.getJob(jobId);
      const res = await dashboard('patch', `/api/queues/deliveries/${jobId}/delay`).send({ runAt: 4_102_444_800_000 }).expect(403);
      expect(res.type).toBe('application/problem+json');
      expect(res.body.detail).toMatch(/backoff/);
      expect((await api.deliveryQueue.getJob(jobId))!.delay).toBe(before!.delay);
    });

    it.each([
      ['change its priority', 'patch', (jobId: string) => `/api/queues/deliveries/${jobId}/priority`, { priority: 2_000_000 }],
      ['add a job scheduler', 'patch', () => '/api/queues/deliveries/job-schedulers/every-minute', { repeat: { every: 60_000 } }],
      ['run a job scheduler', 'put', () => '/api/queues/deliveries/job-schedulers/every-minute/run', {}],
      ['remove a job scheduler', 'put', () => '/api/queues/deliveries/job-schedulers/every-minute/remove', {}],
    ] as const)('refuses to %s', async (_case, method, path, body) => {
      const jobId = await delayedJob();
      const res = await dashboard(method, path(jobId)).send(body).expect(403);
      expect(res.type).toBe('application/problem+json');
      expect(await api.deliveryQueue.getJobSchedulersCount()).toBe(0);
    });

    it('logs every action it allows, with the dashboard user, the action and the job', async () => {
      const jobId = await delayedJob();
      await dashboard('put', `/api/queues/deliveries/${jobId}/promote`).expect(204);
      await dashboard('put', '/api/queues/deliveries/promote').expect(200);
      await dashboard('put', '/api/queues/deliveries/retry/failed').expect(200);
      await dashboard('put', '/api/queues/deliveries/clean/completed').expect(200);
      const actions = api
        .logs()
        .split('\n')
        .filter((line) => line.includes('"message":"dashboard:'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(actions).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ message: 'dashboard: job promoted', user: USERNAME, jobId, queue: 'deliveries' }),
          expect.objectContaining({ message: 'dashboard: delayed jobs promoted', user: USERNAME }),
          expect.objectContaining({ message: 'dashboard: jobs retried', user: USERNAME, status: 'failed' }),
          expect.objectContaining({ message: 'dashboard: jobs cleaned', user: USERNAME, status: 'completed' }),
        ]),
      );
    });
  });

  it('cannot be framed by another site and does not name its framework', async () => {
    for (const path of ['/', '/api/queues']) {
      const res = await dashboard('get', path).expect(200);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
      expect(res.headers).not.toHaveProperty('x-powered-by');
    }
  });
});
