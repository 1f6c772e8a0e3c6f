import { always, closedPort, inTurn, startSelfSignedServer } from '@herald/testing';
import { useHttpRecorders, useWorlds } from './support/world';

const world = useWorlds();
const receiver = useHttpRecorders();

describe('delivery outcomes', () => {
  it('delivers on the third attempt after 500, 500, 200 and records three attempts', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '5' });
    const merchant = await receiver(inTurn({ status: 500, body: { error: 'down' } }, { status: 500 }, { status: 200, body: 'ok' }));
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    const [delivery] = await w.settled([sent!.deliveryId]);
    expect(delivery).toMatchObject({ status: 'succeeded', attemptsMade: 3, lastStatusCode: 200, lastError: null });
    expect(delivery!.completedAt).toBeInstanceOf(Date);
    const attempts = await w.attempts(sent!.deliveryId);
    expect(attempts.map((a) => [a.number, a.statusCode, a.errorKind])).toEqual([
      [1, 500, 'http_status'],
      [2, 500, 'http_status'],
      [3, 200, null],
    ]);
    expect(attempts[0]!.responseBody).toBe('{"error":"down"}');
    expect(attempts[0]!.errorMessage).toBe('the target answered HTTP 500; only 200 counts as delivered');
    expect(attempts[2]!.responseBody).toBe('ok');
    expect(attempts.every((a) => a.durationMs >= 0 && a.startedAt instanceof Date)).toBe(true);
    // Every retry is the same callback: same id, same bytes.
    expect(new Set(merchant.requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([sent!.event.id]));
    expect(new Set(merchant.requests.map((r) => r.body)).size).toBe(1);
    const job = await w.finishedJob(sent!.deliveryId);
    expect(await job.getState()).toBe('completed');
    expect(job.returnvalue).toEqual({ outcome: 'delivered', attempt: 3, statusCode: 200 });
  });

  it('counts an HTTP 201 as a failed attempt: only 200 is delivered', async () => {
    const w = world();
    const merchant = await receiver(inTurn({ status: 201 }, { status: 200 }));
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]).toMatchObject({ status: 'succeeded', attemptsMade: 2 });
    const [first] = await w.attempts(sent!.deliveryId);
    expect(first).toMatchObject({ statusCode: 201, errorKind: 'http_status' });
  });

  it('does not follow a redirect: the 3xx is a failed attempt and the new location is never called', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '1' });
    const merchant = await receiver();
    merchant.respondWith((request) => (request.url === '/hook' ? { status: 302, headers: { location: `${merchant.origin}/elsewhere` } } : { status: 200 }));
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]).toMatchObject({ status: 'failed', lastStatusCode: 302 });
    expect(merchant.requests.map((r) => r.url)).toEqual(['/hook']);
    const [attempt] = await w.attempts(sent!.deliveryId);
    expect(attempt).toMatchObject({ statusCode: 302, errorKind: 'redirect', errorMessage: 'the target redirected (HTTP 302); redirects are not followed' });
  });

  it('gives up on a receiver that never answers after CALLBACK_TIMEOUT_MS', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '1', CALLBACK_TIMEOUT_MS: '300' });
    const merchant = await receiver(always(() => undefined));
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    const [delivery] = await w.settled([sent!.deliveryId]);
    expect(delivery).toMatchObject({ status: 'failed', lastStatusCode: null, lastError: 'no answer within 300 ms' });
    const [attempt] = await w.attempts(sent!.deliveryId);
    expect(attempt).toMatchObject({ statusCode: null, errorKind: 'timeout' });
    expect(attempt!.durationMs).toBeGreaterThanOrEqual(290);
    expect(attempt!.durationMs).toBeLessThan(2_000);
  });

  it('records a refused connection as a connection error', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '1' });
    const { programId } = await w.createTarget(`http://127.0.0.1:${await closedPort()}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]!.status).toBe('failed');
    const [attempt] = await w.attempts(sent!.deliveryId);
    expect(attempt).toMatchObject({ statusCode: null, errorKind: 'connection', errorMessage: 'the connection failed (ECONNREFUSED)' });
  });

  it('checks the certificate of an https target: a self-signed one fails the attempt as tls, and nothing is sent', async () => {
    const server = await startSelfSignedServer();
    try {
      const w = world({ DELIVERY_ATTEMPTS: '1' });
      const { programId } = await w.createTarget(`${server.origin}/hook`);
      w.startWorker();
      const [sent] = await w.sendEvents(programId);

      expect((await w.settled([sent!.deliveryId]))[0]!.status).toBe('failed');
      const [attempt] = await w.attempts(sent!.deliveryId);
      expect(attempt).toMatchObject({ statusCode: null, errorKind: 'tls', errorMessage: 'the TLS connection failed (DEPTH_ZERO_SELF_SIGNED_CERT)' });
      expect(server.received).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('reads at most CALLBACK_RESPONSE_MAX_BYTES of an answer, even one that never ends', async () => {
    const w = world({ CALLBACK_RESPONSE_MAX_BYTES: '100', CALLBACK_TIMEOUT_MS: '5000' });
    const merchant = await receiver(
      always((res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write('x'.repeat(1024))), 5);
        res.on('close', () => clearInterval(drip));
      }),
    );
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]!.status).toBe('succeeded');
    const [attempt] = await w.attempts(sent!.deliveryId);
    expect(attempt!.responseBody).toBe('x'.repeat(100));
    expect(attempt!.durationMs).toBeLessThan(2_000);
  });

  it('counts a 200 whose body stalls as delivered at CALLBACK_TIMEOUT_MS, keeping what arrived', async () => {
    const w = world({ CALLBACK_TIMEOUT_MS: '300' });
    const merchant = await receiver(
      always((res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('accepted, and then');
      }),
    );
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]).toMatchObject({ status: 'succeeded', attemptsMade: 1 });
    const [attempt] = await w.attempts(sent!.deliveryId);
    expect(attempt).toMatchObject({ statusCode: 200, errorKind: null, responseBody: 'accepted, and then' });
    expect(attempt!.durationMs).toBeGreaterThanOrEqual(290);
  });

  it('waits as long as a 429 Retry-After asks before the next attempt', async () => {
    const w = world();
    const merchant = await receiver(inTurn({ status: 429, headers: { 'retry-after': '1' } }, { status: 200 }));
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]!.status).toBe('succeeded');
    const [first, second] = merchant.requests;
    // The exponential delay is 10 ms; the merchant asked for a second.
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(950);
    expect((await w.attempts(sent!.deliveryId))[0]).toMatchObject({ statusCode: 429, errorKind: 'http_status' });
  });

  it('cuts a Retry-After longer than RETRY_AFTER_MAX_MS down to it', async () => {
    const w = world({ RETRY_AFTER_MAX_MS: '300' });
    const merchant = await receiver(inTurn({ status: 503, headers: { 'retry-after': '3600' } }, { status: 200 }));
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]!.status).toBe('succeeded');
    const [first, second] = merchant.requests;
    const waited = second!.receivedAt - first!.receivedAt;
    expect(waited).toBeGreaterThanOrEqual(290);
    expect(waited).toBeLessThan(3_000);
  });

  it('marks the delivery failed after the last attempt, leaves the job in the failed set, and delivers when the job is retried', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '2' });
    const merchant = await receiver(always({ status: 500 }));
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    const [failed] = await w.settled([sent!.deliveryId]);
    expect(failed).toMatchObject({
      status: 'failed',
      attemptsMade: 2,
      lastStatusCode: 500,
      lastError: 'the target answered HTTP 500; only 200 counts as delivered',
    });
    expect(failed!.completedAt).toBeInstanceOf(Date);
    const job = await w.finishedJob(sent!.deliveryId);
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(2);
    expect(job.failedReason).toBe('the target answered HTTP 500; only 200 counts as delivered');
    // What the dashboard's Error tab shows: the reason, no trace into the server's files.
    expect(job.stacktrace).toEqual([
      'CallbackAttemptError: the target answered HTTP 500; only 200 counts as delivered',
      'CallbackAttemptError: the target answered HTTP 500; only 200 counts as delivered',
    ]);

    merchant.respondWith(always({ status: 200 }));
    await job.retry();
    const [delivered] = await w.settled([sent!.deliveryId], ['succeeded']);
    expect(delivered).toMatchObject({ attemptsMade: 3, lastStatusCode: 200, lastError: null });
    expect((await w.attempts(sent!.deliveryId)).map((a) => [a.number, a.statusCode])).toEqual([
      [1, 500],
      [2, 500],
      [3, 200],
    ]);
  });

  it('does not send a delivery that has already succeeded again', async () => {
    const w = world();
    const merchant = await receiver();
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    const [sent] = await w.sendEvents(programId);
    await w.prisma.delivery.updateMany({ where: { id: sent!.deliveryId }, data: { status: 'succeeded', completedAt: new Date() } });
    w.startWorker();

    const job = await w.finishedJob(sent!.deliveryId);
    expect(job.returnvalue).toEqual({ outcome: 'already-delivered' });
    expect(merchant.requests).toHaveLength(0);
    expect(await w.attempts(sent!.deliveryId)).toHaveLength(0);
  });

  it.each([
    ['deleted', 'the notification target was deleted; not sent'],
    ['switched off', 'the notification target is switched off; not sent'],
  ] as const)('fails the delivery of a target %s since, at once, without sending and without retrying', async (change, reason) => {
    const w = world({ DELIVERY_ATTEMPTS: '5' });
    const merchant = await receiver();
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    const [sent] = await w.sendEvents(programId);
    const owner = { kind: 'program', programId } as const;
    if (change === 'deleted') await w.targets().remove(owner);
    else await w.targets().upsert(owner, { url: `${merchant.origin}/hook`, auth: { mode: 'none' }, notifications: {}, enabled: false });
    w.startWorker();

    const [delivery] = await w.settled([sent!.deliveryId]);
    expect(delivery).toMatchObject({ status: 'failed', attemptsMade: 1, lastError: reason });
    expect((await w.attempts(sent!.deliveryId)).map((a) => a.errorKind)).toEqual(['target_unavailable']);
    expect(merchant.requests).toHaveLength(0);
    const job = await w.finishedJob(sent!.deliveryId);
    expect(await job.getState()).toBe('failed');
    expect(job.attemptsMade).toBe(1);
    expect(job.stacktrace).toEqual([`UnrecoverableError: ${reason}`]);
  });
});
