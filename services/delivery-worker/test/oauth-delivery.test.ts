import { randomBytes } from 'node:crypto';
import type { TargetAuth } from '@herald/db';
import { createRedisConnection } from '@herald/queue';
import { always, inTurn, waitFor, type HttpRecorder, type Responder } from '@herald/testing';
import { issueTokens } from './support/tokens';
import { useHttpRecorders, useWorlds, type World } from './support/world';

const world = useWorlds();
const server = useHttpRecorders();

const PASSWORD = 'oauth-pa55word-never-logged';

/** A program whose target uses OAuth, with a receiver and a token endpoint on loopback. */
async function oauthTarget(w: World, receiverResponder?: Responder, tokenResponder: Responder = issueTokens()) {
  const receiver = await server(receiverResponder);
  const tokens = await server(tokenResponder);
  const auth: TargetAuth = { mode: 'oauth', authUrl: `${tokens.origin}/oauth/token`, username: 'client-1', password: PASSWORD };
  const { programId } = await w.createTarget(`${receiver.origin}/hook`, auth);
  return { receiver, tokens, programId };
}

const bearers = (receiver: HttpRecorder) => receiver.requests.map((r) => r.headers.authorization);

describe('OAuth callbacks', () => {
  it('makes one token request for 50 callbacks to one target', async () => {
    const w = world();
    // A slow token endpoint: every callback of the burst asks while the first request is in flight.
    const { receiver, tokens, programId } = await oauthTarget(w, undefined, issueTokens(3600, 100));
    w.startWorker();
    const sent = await w.sendEvents(programId, 50);

    const rows = await w.settled(sent.map((s) => s.deliveryId));
    expect(rows.every((row) => row.status === 'succeeded')).toBe(true);
    expect(tokens.requests).toHaveLength(1);
    expect(receiver.requests).toHaveLength(50);
    expect(new Set(bearers(receiver))).toEqual(new Set(['Bearer token-1']));
  });

  it('requests a second token once the first has expired', async () => {
    const w = world();
    // expires_in 1: cached for 900 ms (the expiry margin is a tenth of a short lifetime).
    const { receiver, tokens, programId } = await oauthTarget(w, undefined, issueTokens(1));
    w.startWorker();
    const [first] = await w.sendEvents(programId);
    await w.settled([first!.deliveryId]);
    // The cached token expires with its Redis key.
    const redis = createRedisConnection(w.config.redisUrl, { role: 'client' });
    try {
      // A client connection queues nothing while it connects.
      await new Promise((resolve) => redis.once('ready', resolve));
      await waitFor(
        () => redis.keys(`${w.config.queuePrefix}:callback-auth:token:*`),
        (keys) => keys.length === 0,
        5_000,
        'the cached token to expire',
      );
    } finally {
      redis.disconnect();
    }
    const [second] = await w.sendEvents(programId);
    await w.settled([second!.deliveryId]);

    expect(tokens.requests).toHaveLength(2);
    expect(bearers(receiver)).toEqual(['Bearer token-1', 'Bearer token-2']);
  });

  it('shares one token between two workers on separate Redis connections', async () => {
    const w = world({ WORKER_CONCURRENCY: '4' });
    const { receiver, tokens, programId } = await oauthTarget(w, always({ status: 200, delayMs: 20 }), issueTokens(3600, 200));
    const workers = [w.startWorker(), w.startWorker()];
    const completedBy = new Map(workers.map((worker) => [worker, 0]));
    for (const worker of workers) worker.on('completed', () => completedBy.set(worker, completedBy.get(worker)! + 1));
    const sent = await w.sendEvents(programId, 40);

    const rows = await w.settled(sent.map((s) => s.deliveryId));
    expect(rows.every((row) => row.status === 'succeeded')).toBe(true);
    expect([...completedBy.values()].every((count) => count > 0)).toBe(true);
    expect(tokens.requests).toHaveLength(1);
    expect(new Set(bearers(receiver))).toEqual(new Set(['Bearer token-1']));
  });

  it('keys the token cache with SECRETS_KEY: after a rotation the workers fetch one new token and share it', async () => {
    const oldKey = randomBytes(32).toString('hex');
    const before = world({ SECRETS_KEY: oldKey });
    const { receiver, tokens, programId } = await oauthTarget(before);
    const oldWorker = before.startWorker();
    const [first] = await before.sendEvents(programId);
    await before.settled([first!.deliveryId]);
    await oldWorker.close();

    const rotated = { SECRETS_KEY: randomBytes(32).toString('hex'), SECRETS_KEY_ID: 'k2', SECRETS_PREVIOUS_KEYS: `k1:${oldKey}` };
    const after = world({ ...rotated, QUEUE_PREFIX: before.config.queuePrefix });
    after.startWorker();
    after.startWorker();
    const sent = await after.sendEvents(programId, 10);
    const rows = await after.settled(sent.map((s) => s.deliveryId));

    expect(rows.every((row) => row.status === 'succeeded')).toBe(true);
    expect(tokens.requests).toHaveLength(2);
    expect(bearers(receiver)).toEqual(['Bearer token-1', ...Array(10).fill('Bearer token-2')]);
  });

  it('answers a 401 from the target with a fresh token and one more POST in the same attempt', async () => {
    const w = world();
    const { receiver, tokens, programId } = await oauthTarget(w, inTurn({ status: 401 }, { status: 200 }));
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]).toMatchObject({ status: 'succeeded', attemptsMade: 1 });
    expect(tokens.requests).toHaveLength(2);
    expect(bearers(receiver)).toEqual(['Bearer token-1', 'Bearer token-2']);
    expect((await w.attempts(sent!.deliveryId)).map((a) => [a.number, a.statusCode])).toEqual([[1, 200]]);
  });

  it('records a token endpoint answering 500 as an oauth error and retries the job', async () => {
    const w = world();
    const valid = issueTokens();
    const { receiver, tokens, programId } = await oauthTarget(w, undefined, (request, i) => (i === 0 ? { status: 500, body: 'boom' } : valid(request, i)));
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]).toMatchObject({ status: 'succeeded', attemptsMade: 2 });
    const [failed, delivered] = await w.attempts(sent!.deliveryId);
    expect(failed).toMatchObject({ statusCode: null, errorKind: 'oauth' });
    expect(failed!.errorMessage).toContain('the token endpoint answered HTTP 500');
    expect(delivered).toMatchObject({ statusCode: 200 });
    expect(tokens.requests).toHaveLength(2);
    expect(receiver.requests).toHaveLength(1);
  });

  it('records a token endpoint answering malformed JSON as an oauth error, without the credentials', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '2' });
    const { receiver, programId } = await oauthTarget(w, undefined, always({ status: 200, body: '{"access_token": "abc", ' }));
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]).toMatchObject({ status: 'failed', attemptsMade: 2 });
    const attempts = await w.attempts(sent!.deliveryId);
    expect(attempts.map((a) => a.errorKind)).toEqual(['oauth', 'oauth']);
    expect(attempts[0]!.errorMessage).toContain('the body is not JSON');
    expect(receiver.requests).toHaveLength(0);
    const job = await w.queue.getJob(sent!.deliveryId);
    for (const text of [...attempts.map((a) => a.errorMessage), job!.failedReason, w.logs()]) {
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain(Buffer.from(`client-1:${PASSWORD}`).toString('base64'));
    }
  });
});
