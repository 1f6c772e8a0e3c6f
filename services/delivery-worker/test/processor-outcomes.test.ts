// The delivery processor's outcome table, with fakes at each of its seams (store, auth, send,
// logger, metrics): which answers count as delivered, which are recorded and retried, and which
// fail the job at once. delivery-outcomes.test.ts and oauth-delivery.test.ts run the same
// decisions end to end against real PostgreSQL, Redis and HTTP servers.
import { AuthConfigurationError, TokenWaitTimeoutError, UnknownAuthModeError, type CallbackAuthStrategy } from '@herald/callback-auth';
import { CredentialsCipherError, type AttemptOutcome, type DeliveryTarget, type DeliveryWork, type NewDeliveryAttempt } from '@herald/db';
import { newSigningSecret, type DeliveryRef, type Event } from '@herald/domain';
import { Webhook } from 'standardwebhooks';
import type { Logger } from '@herald/logging';
import type { DeferralReason } from '@herald/domain';
import type { Admission, GateVerdict } from '@herald/queue';
import { DelayedError, UnrecoverableError } from 'bullmq';
import type { CallbackRequest, CallbackResponse } from '@herald/callbacks';
import { CallbackAttemptError } from '../src/errors/callback-attempt-error';
import { OutboundRequestError } from '@herald/outbound';
import { createDeliveryProcessor, type DeliveryJob } from '../src/processor';

const storedAt = new Date('2026-11-22T10:00:01.234Z');
const ref: DeliveryRef = {
  deliveryId: 'd-1',
  eventId: 'Event-1',
  targetId: 't-1',
  programId: 'p-1',
  merchantId: null,
  targetOwner: 'program',
  storedAt: storedAt.toISOString(),
};
const event = { id: 'Event-1', createdAt: '2026-11-22T10:00:00.000Z', origin: 'api', eventType: 'created', objectId: 'o-1', objectType: 'payment' } as Event;
const programTarget: DeliveryTarget = {
  id: 't-1',
  programId: 'p-1',
  merchantId: null,
  url: 'https://merchant.example/hooks?token=s3cret',
  auth: { mode: 'none' },
  notifications: {},
  enabled: true,
  ordering: 'none',
  disabledReason: null,
  failingSince: null,
  lastSuccessAt: null,
  deletedAt: null,
  delivery: {},
  signing: { secrets: { current: newSigningSecret() }, graceEndsAt: null },
};

/** A merchant answer or a transport failure, in the order the fake `send` gives them. */
type Answer = CallbackResponse | Error;

interface Scene {
  /** The target as stored: usable, gone (null), or with credentials no key decrypts (the cipher's error). Default programTarget. */
  target?: DeliveryTarget | CredentialsCipherError | null;
  event?: Event | null;
  status?: 'pending' | 'succeeded' | 'failed';
  answers?: Answer[];
  /** The auth strategy for the target; or the error building it throws. */
  auth?: CallbackAuthStrategy | Error;
  /** Tries BullMQ counted before this one, of `attempts` in all. */
  attemptsMade?: number;
  attempts?: number;
  /** No such delivery. */
  missing?: boolean;
  /** The target gate's answer for the job. Default: let in. */
  admission?: Admission;
  /** What the gate says beforehand of the target (DeliveryGate.expectsAdmission); default false. */
  expectsAdmission?: boolean;
  /** TARGET_AUTO_DISABLE_AFTER in ms; 0 (off) by default. */
  autoDisableAfterMs?: number;
  /** Whether the store reports the target switched off when asked to. */
  switchesOff?: boolean;
}

function strategy(mode: CallbackAuthStrategy['mode'], headers: () => Promise<Record<string, string>> = async () => ({})) {
  return { mode, headers: jest.fn(headers), invalidate: jest.fn(async () => {}) };
}

/** Runs one attempt of the delivery in `scene` and returns what every seam saw. */
async function attempt(scene: Scene) {
  const recorded: Array<{ deliveryId: string; attempt: NewDeliveryAttempt; outcome: AttemptOutcome }> = [];
  const disableRequests: boolean[] = [];
  const storedAts: Array<Date | undefined> = [];
  const healthWrites: Array<boolean | undefined> = [];
  const sent: CallbackRequest[] = [];
  const counted: string[] = [];
  const warnings: Array<{ message: string; meta: unknown }> = [];
  const answers = [...(scene.answers ?? [])];
  const attemptsMade = scene.attemptsMade ?? 0;
  const auth = scene.auth ?? strategy('none');
  const deferrals: Array<{ deliveryId: string; reason: DeferralReason }> = [];
  const deferredCounted: DeferralReason[] = [];
  const released: Array<{ targetId: string; jobId: string; verdict: GateVerdict }> = [];
  const moves: Array<{ timestamp: number; token: string | undefined }> = [];
  let loads = 0;
  // The order in which the processor called the gate and loaded the delivery.
  const order: Array<'admit' | 'load'> = [];

  const process = createDeliveryProcessor({
    deliveries: {
      load: async ({ deliveryId }) =>
        order.push('load') && ++loads && scene.missing
          ? null
          : {
              delivery: { id: deliveryId, eventId: ref.eventId, targetId: ref.targetId, status: scene.status ?? 'pending', attemptsMade, storedAt },
              target: loaded(scene.target === undefined ? programTarget : scene.target),
              eventJson: scene.event === undefined ? JSON.stringify(event) : scene.event && JSON.stringify(scene.event),
              predecessorId: null,
            },
      record: async ({ deliveryId, storedAt: recordedStoredAt, attempt, outcome, disableTarget = false, changesTargetHealth }) => {
        recorded.push({ deliveryId, attempt, outcome });
        storedAts.push(recordedStoredAt);
        disableRequests.push(disableTarget);
        healthWrites.push(changesTargetHealth);
        return { number: attemptsMade + 1, targetAutoDisabled: disableTarget && scene.switchesOff !== false };
      },
      recordDeferral: async ({ deliveryId }, reason) => void deferrals.push({ deliveryId, reason }),
    },
    // Every scene here goes to a target that delivers in any order: nothing waits, nothing is woken.
    order: { waitForPredecessor: async () => null, releaseSuccessors: async () => undefined },
    gate: {
      admit: async () => {
        order.push('admit');
        return scene.admission ?? { admitted: true, probe: false };
      },
      expectsAdmission: () => scene.expectsAdmission ?? false,
      // Known: the order tests below are about a target this worker has loaded before.
      knowsLimit: () => true,
      setLimit: () => undefined,
      release: async (targetId, jobId, verdict) => void released.push({ targetId, jobId, verdict }),
    },
    authFor: () => {
      if (auth instanceof Error) throw auth;
      return auth;
    },
    send: async (request) => {
      sent.push(request);
      const answer = answers.shift();
      if (answer === undefined) throw new Error('the test gave no answer for this POST');
      if (answer instanceof Error) throw answer;
      return answer;
    },
    logger: {
      isLevelEnabled: () => true,
      http: () => {},
      debug: () => {},
      warn: (message: string, meta: unknown) => void warnings.push({ message, meta }),
    } as unknown as Logger,
    metrics: {
      deliveryAttempt: (outcome) => void counted.push(outcome),
      deliveryDeferred: (reason) => void deferredCounted.push(reason),
      targetAutoDisabled: () => void counted.push('target_auto_disabled'),
    },
    autoDisableAfterMs: scene.autoDisableAfterMs ?? 0,
    // Defaults that leave the job's own attempts (scene.attempts) the bound, as before policies.
    policyDefaults: { attempts: 100, maxBackoffMs: 60_000, timeoutMs: 2_000, maxInFlight: 16 },
    pauseMaxMs: 3_600_000,
  });

  const job: DeliveryJob = {
    id: ref.deliveryId,
    data: ref,
    attemptsMade,
    attemptsStarted: attemptsMade + 1,
    opts: { attempts: scene.attempts ?? 3 },
    moveToDelayed: async (timestamp, token) => void moves.push({ timestamp, token }),
  };
  const settled = await process(job, 'lock-token').then(
    (value) => ({ value, error: undefined }),
    (error: unknown) => ({ value: undefined, error }),
  );
  return { ...settled, recorded, storedAts, disableRequests, healthWrites, sent, counted, warnings, deferrals, deferredCounted, released, moves, loads, order };
}

const ok = (body = 'ok'): CallbackResponse => ({ status: 200, body });
const status = (code: number, extra: Partial<CallbackResponse> = {}): CallbackResponse => ({ status: code, body: `answer ${code}`, ...extra });

describe('the delivery processor', () => {
  describe('HTTP 200', () => {
    it('is delivered: one POST of the event, the attempt recorded as succeeded', async () => {
      const r = await attempt({ answers: [ok('thanks')] });
      expect(r.value).toEqual({ outcome: 'delivered', attempt: 1, statusCode: 200 });
      expect(r.sent).toHaveLength(1);
      expect(r.sent[0]).toMatchObject({
        url: programTarget.url,
        body: JSON.stringify(event),
        headers: { 'content-type': 'application/json', 'webhook-id': event.id },
      });
      expect(r.sent[0]!.headers['webhook-timestamp']).toMatch(/^\d+$/);
      expect(() => new Webhook(programTarget.signing.secrets.current).verify(r.sent[0]!.body, r.sent[0]!.headers)).not.toThrow();
      expect(r.recorded).toEqual([
        {
          deliveryId: 'd-1',
          outcome: 'succeeded',
          attempt: expect.objectContaining({
            statusCode: 200,
            responseBody: 'thanks',
            startedAt: expect.any(Date),
            url: 'https://merchant.example/hooks?token=***',
          }),
        },
      ]);
      expect(r.recorded[0]!.attempt).not.toHaveProperty('errorKind');
      // The record reads only the week its delivery was stored in.
      expect(r.storedAts).toEqual([storedAt]);
      expect(r.counted).toEqual(['delivered']);
    });

    it('adds the auth strategy headers to the POST', async () => {
      const r = await attempt({ auth: strategy('basic', async () => ({ authorization: 'Basic c2hvcDpwdw==' })), answers: [ok()] });
      expect(r.sent[0]!.headers['authorization']).toBe('Basic c2hvcDpwdw==');
    });
  });

  describe.each([
    [201, 'http_status'],
    [204, 'http_status'],
    [301, 'redirect'],
    [302, 'redirect'],
    [307, 'redirect'],
    [400, 'http_status'],
    [404, 'http_status'],
    [410, 'http_status'],
    [500, 'http_status'],
    [502, 'http_status'],
  ])('HTTP %i', (code, kind) => {
    it(`is a failed attempt (${kind}), recorded as pending and thrown for BullMQ to retry`, async () => {
      const r = await attempt({ answers: [status(code)] });
      expect(r.error).toBeInstanceOf(CallbackAttemptError);
      expect(r.error).toMatchObject({ kind, statusCode: code, attempt: 1 });
      expect(r.error).not.toBeInstanceOf(UnrecoverableError);
      expect(r.recorded).toEqual([
        { deliveryId: 'd-1', outcome: 'pending', attempt: expect.objectContaining({ statusCode: code, errorKind: kind, responseBody: `answer ${code}` }) },
      ]);
      expect(r.counted).toEqual(['attempt_failed']);
      expect(r.warnings[0]!.message).toMatch(/will retry/);
    });

    it('fails the delivery on the last try', async () => {
      const r = await attempt({ answers: [status(code)], attemptsMade: 2, attempts: 3 });
      // For good: BullMQ's attempts are only a ceiling, the policy counts them.
      expect(r.error).toBeInstanceOf(UnrecoverableError);
      expect(r.error).toMatchObject({ name: 'CallbackAttemptError', kind, attempt: 3 });
      expect(r.recorded[0]!.outcome).toBe('failed');
      expect(r.counted).toEqual(['failed']);
      expect(r.warnings[0]!.message).toMatch(/no more attempts/);
    });
  });

  describe("the target's delivery policy", () => {
    const withPolicy = (delivery: DeliveryTarget['delivery']): DeliveryTarget => ({ ...programTarget, delivery });

    it("fails the delivery for good once the policy's attempts are spent, before the job's own attempts", async () => {
      const r = await attempt({ target: withPolicy({ attempts: 2 }), answers: [status(500)], attemptsMade: 1, attempts: 100 });
      expect(r.error).toBeInstanceOf(UnrecoverableError);
      expect(r.recorded[0]!.outcome).toBe('failed');
    });

    it('retries while the policy has attempts left, and hands the backoff its longest wait', async () => {
      const r = await attempt({ target: withPolicy({ attempts: 5, maxBackoffMs: 120_000 }), answers: [status(500)], attemptsMade: 1, attempts: 100 });
      expect(r.error).toBeInstanceOf(CallbackAttemptError);
      expect(r.error).toMatchObject({ backoffMaxMs: 120_000 });
      expect(r.recorded[0]!.outcome).toBe('pending');
    });

    it('hands the backoff the default longest wait, and sends with the default time limit, when the target sets none', async () => {
      const r = await attempt({ answers: [status(500)] });
      expect(r.error).toMatchObject({ backoffMaxMs: 60_000 });
      expect(r.sent[0]!.timeoutMs).toBe(2_000);
    });

    it("sends the POST with the policy's time limit", async () => {
      const r = await attempt({ target: withPolicy({ timeoutMs: 300 }), answers: [ok()] });
      expect(r.sent[0]!.timeoutMs).toBe(300);
    });
  });

  it.each([429, 503])('passes the Retry-After of an HTTP %i on to the backoff', async (code) => {
    const r = await attempt({ answers: [status(code, { retryAfterMs: 30_000 })] });
    expect(r.error).toBeInstanceOf(CallbackAttemptError);
    expect(r.error).toMatchObject({ kind: 'http_status', statusCode: code, retryAfterMs: 30_000 });
  });

  it('gives no Retry-After hint when the answer had none', async () => {
    const r = await attempt({ answers: [status(503)] });
    expect((r.error as CallbackAttemptError).retryAfterMs).toBeUndefined();
  });

  it.each(['timeout', 'connection', 'tls'] as const)('records a %s failure of the POST with its kind, without a status, and retries it', async (kind) => {
    const r = await attempt({ answers: [new OutboundRequestError(kind, `the callback failed: ${kind}`, kind === 'timeout' ? undefined : 'ECONNRESET')] });
    expect(r.error).toBeInstanceOf(CallbackAttemptError);
    expect(r.error).toMatchObject({ kind, statusCode: undefined });
    expect(r.recorded[0]).toMatchObject({
      outcome: 'pending',
      attempt: { errorKind: kind, errorMessage: `the callback failed: ${kind}`, url: 'https://merchant.example/hooks?token=***' },
    });
    expect(r.recorded[0]!.attempt).not.toHaveProperty('statusCode');
  });

  it("signs with the previous secret too while a rotation's grace period lasts, and with the new one alone after it", async () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    const verifiedBy = async (graceEndsAt: Date) => {
      const r = await attempt({ target: { ...programTarget, signing: { secrets: { current, previous }, graceEndsAt } }, answers: [ok()] });
      const { body, headers } = r.sent[0]!;
      return [current, previous].map((secret) => {
        try {
          new Webhook(secret).verify(body, headers);
          return true;
        } catch {
          return false;
        }
      });
    };
    expect(await verifiedBy(new Date(Date.now() + 60_000))).toEqual([true, true]);
    expect(await verifiedBy(new Date(Date.now() - 1))).toEqual([true, false]);
  });

  describe('OAuth', () => {
    it('on a 401, forgets the token and POSTs once more within the same attempt', async () => {
      const tokens = ['Bearer old', 'Bearer new'];
      const auth = strategy('oauth', async () => ({ authorization: tokens.shift()! }));
      const r = await attempt({ auth, answers: [status(401), ok()] });
      expect(r.value).toMatchObject({ outcome: 'delivered', attempt: 1 });
      expect(auth.invalidate).toHaveBeenCalledTimes(1);
      expect(r.sent.map((request) => request.headers['authorization'])).toEqual(['Bearer old', 'Bearer new']);
      expect(r.recorded).toHaveLength(1);
    });

    it('takes a second 401 as the merchant answer: one attempt recorded, retried', async () => {
      const auth = strategy('oauth', async () => ({ authorization: 'Bearer t' }));
      const r = await attempt({ auth, answers: [status(401), status(401)] });
      expect(r.sent).toHaveLength(2);
      expect(auth.invalidate).toHaveBeenCalledTimes(1);
      expect(r.error).toMatchObject({ kind: 'http_status', statusCode: 401 });
      expect(r.recorded).toHaveLength(1);
      expect(r.recorded[0]!.outcome).toBe('pending');
    });

    it('does not POST again on a 401 to a target without OAuth', async () => {
      const auth = strategy('basic', async () => ({ authorization: 'Basic x' }));
      const r = await attempt({ auth, answers: [status(401)] });
      expect(r.sent).toHaveLength(1);
      expect(auth.invalidate).not.toHaveBeenCalled();
      expect(r.error).toMatchObject({ kind: 'http_status', statusCode: 401 });
    });

    it('records a token that could not be had as an oauth failure, retried, without sending the callback', async () => {
      const auth = strategy('oauth', () => Promise.reject(new TokenWaitTimeoutError('t-1', 1_000)));
      const r = await attempt({ auth });
      expect(r.sent).toHaveLength(0);
      expect(r.error).toMatchObject({ kind: 'oauth' });
      expect(r.recorded[0]!.outcome).toBe('pending');
      // Nothing went out: no URL to show.
      expect(r.recorded[0]!.attempt).not.toHaveProperty('url');
    });
  });

  describe('a target that cannot be used', () => {
    it.each([
      ['switched off', { ...programTarget, enabled: false }, /switched off/],
      ['deleted', { ...programTarget, deletedAt: new Date() }, /was deleted/],
      ['gone', null, /no longer exists/],
    ])('fails at once when the target is %s: target_unavailable, not sent, not retried', async (_state, target, message) => {
      const r = await attempt({ target, answers: [ok()] });
      expect(r.sent).toHaveLength(0);
      expect(r.error).toBeInstanceOf(UnrecoverableError);
      expect((r.error as Error).message).toMatch(message);
      expect(r.recorded[0]).toMatchObject({ outcome: 'failed', attempt: { errorKind: 'target_unavailable' } });
      expect(r.recorded[0]!.attempt).not.toHaveProperty('url');
      expect(r.counted).toEqual(['failed']);
    });

    it.each([
      ['credentials no key decrypts', { target: new CredentialsCipherError('unknown_key', 't-1', 'old-key') }],
      ['an unknown auth mode', { auth: new UnknownAuthModeError('t-1', 'kerberos') }],
      [
        'unusable auth settings',
        { auth: strategy('oauth', () => Promise.reject(new AuthConfigurationError('authUrl', 'the Authentication URL is not absolute'))) },
      ],
    ] as Array<[string, Scene]>)('fails at once on %s: configuration, not sent, not retried', async (_case, scene) => {
      const r = await attempt({ ...scene, answers: [ok()] });
      expect(r.sent).toHaveLength(0);
      expect(r.error).toBeInstanceOf(UnrecoverableError);
      expect(r.recorded[0]).toMatchObject({ outcome: 'failed', attempt: { errorKind: 'configuration' } });
    });
  });

  describe('what is not a callback failure', () => {
    it('does not send a delivery that has succeeded already (a replayed or duplicate job)', async () => {
      const r = await attempt({ status: 'succeeded', answers: [ok()] });
      expect(r.value).toEqual({ outcome: 'already-delivered' });
      expect(r.sent).toHaveLength(0);
      expect(r.recorded).toHaveLength(0);
      expect(r.counted).toEqual([]);
    });

    it('fails the job of a delivery that does not exist without recording anything', async () => {
      const r = await attempt({ missing: true });
      expect(r.error).toBeInstanceOf(UnrecoverableError);
      expect(r.recorded).toHaveLength(0);
    });

    it('fails at once, as internal, when the event is gone', async () => {
      const r = await attempt({ event: null, answers: [ok()] });
      expect(r.sent).toHaveLength(0);
      expect(r.error).toBeInstanceOf(UnrecoverableError);
      expect(r.recorded[0]).toMatchObject({ outcome: 'failed', attempt: { errorKind: 'internal' } });
    });

    it("records Herald's own unexpected error as internal and retries it", async () => {
      const r = await attempt({ answers: [new TypeError('something broke')] });
      expect(r.error).toMatchObject({ kind: 'internal', message: 'TypeError: something broke' });
      expect(r.recorded[0]!.outcome).toBe('pending');
    });
  });

  describe("the target's health write", () => {
    const MINUTE = 60_000;
    const seen = (failingSince: Date | null, lastSuccessAt: Date | null): DeliveryTarget => ({ ...programTarget, failingSince, lastSuccessAt });
    const ago = (ms: number): Date => new Date(Date.now() - ms);

    it.each([
      ['a 200 to a target that answered 200 within the last minute', seen(null, ago(MINUTE / 2)), [ok()], false],
      ['a 200 to a target whose last 200 is older than a minute', seen(null, ago(2 * MINUTE)), [ok()], true],
      ['a 200 to a target that never answered 200', seen(null, null), [ok()], true],
      ['a 200 that ends a run of failures', seen(ago(MINUTE), ago(MINUTE / 2)), [ok()], true],
      ['a failure that starts a run of failures', seen(null, ago(MINUTE / 2)), [status(500)], true],
      ['a failure within a run of failures', seen(ago(MINUTE), null), [status(500)], false],
    ] as Array<[string, DeliveryTarget, Answer[], boolean]>)('is asked for after %s: %s', async (_case, target, answers, expected) => {
      const r = await attempt({ target, answers });
      expect(r.healthWrites).toEqual([expected]);
    });
  });

  describe('auto-disable (TARGET_AUTO_DISABLE_AFTER)', () => {
    const HOUR = 3_600_000;
    const failingTarget = (msAgo: number): DeliveryTarget => ({ ...programTarget, failingSince: new Date(Date.now() - msAgo) });

    it('asks to switch off a target failing longer than the threshold, and fails the delivery for good saying so', async () => {
      const target = failingTarget(2 * HOUR);
      const r = await attempt({ target, autoDisableAfterMs: HOUR, answers: [status(500)], attempts: 12 });
      expect(r.disableRequests).toEqual([true]);
      expect(r.recorded[0]!.outcome).toBe('failed');
      expect(r.error).toBeInstanceOf(UnrecoverableError);
      expect((r.error as Error).message).toBe(
        `the target answered HTTP 500; only 200 counts as delivered; every attempt since ${target.failingSince!.toISOString()} failed, so the notification target is auto-disabled`,
      );
      expect(r.counted).toEqual(['failed', 'target_auto_disabled']);
      expect(r.warnings.filter((w) => w.message.startsWith('notification target auto-disabled'))).toHaveLength(1);
    });

    it('logs and counts nothing when another worker or an admin got there first', async () => {
      const r = await attempt({ target: failingTarget(2 * HOUR), autoDisableAfterMs: HOUR, answers: [status(500)], switchesOff: false });
      expect(r.disableRequests).toEqual([true]);
      expect(r.counted).toEqual(['failed']);
      expect(r.warnings.some((w) => w.message.includes('auto-disabled'))).toBe(false);
    });

    it.each([
      ['a run of failures shorter than the threshold', { target: failingTarget(HOUR - 60_000), autoDisableAfterMs: HOUR, answers: [status(500)] }],
      ['the first failure (no run yet)', { autoDisableAfterMs: HOUR, answers: [status(500)] }],
      ['a threshold of 0', { target: failingTarget(1_000 * HOUR), autoDisableAfterMs: 0, answers: [status(500)] }],
      ["Herald's own failure (the event is gone)", { target: failingTarget(2 * HOUR), autoDisableAfterMs: HOUR, event: null }],
      ['a delivered attempt', { target: failingTarget(2 * HOUR), autoDisableAfterMs: HOUR, answers: [ok()] }],
    ] as Array<[string, Scene]>)('does not ask after %s', async (_case, scene) => {
      const r = await attempt(scene);
      expect(r.disableRequests).toEqual([false]);
      expect(r.counted).not.toContain('target_auto_disabled');
    });

    it('says why an auto-disabled target is not sent to', async () => {
      const r = await attempt({ target: { ...programTarget, enabled: false, disabledReason: 'auto-disabled' } });
      expect(r.sent).toHaveLength(0);
      expect((r.error as Error).message).toMatch(/^the notification target was auto-disabled after every attempt failed for too long/);
      expect(r.disableRequests).toEqual([false]);
    });
  });

  it('never writes the target URL (which may hold a secret) into what it records or logs', async () => {
    const r = await attempt({ answers: [status(500)] });
    expect(JSON.stringify([r.recorded, r.warnings, (r.error as Error).message])).not.toContain('s3cret');
  });

  describe('the target gate', () => {
    it.each([
      ['target_busy', 1_500],
      ['breaker_open', 31_000],
    ] as const)(
      'defers a job the gate turns away (%s): moved back to the delayed set with its lock token, no load, no POST, no attempt',
      async (reason, delayMs) => {
        const before = Date.now();
        const r = await attempt({ admission: { admitted: false, reason, delayMs }, answers: [ok()] });
        expect(r.error).toBeInstanceOf(DelayedError);
        expect(r.moves).toEqual([{ timestamp: expect.any(Number), token: 'lock-token' }]);
        expect(r.moves[0]!.timestamp).toBeGreaterThanOrEqual(before + delayMs);
        expect(r.moves[0]!.timestamp).toBeLessThanOrEqual(Date.now() + delayMs);
        expect(r.loads).toBe(0);
        expect(r.sent).toHaveLength(0);
        expect(r.recorded).toHaveLength(0);
        expect(r.counted).toEqual([]);
        expect(r.deferrals).toEqual([{ deliveryId: 'd-1', reason }]);
        expect(r.deferredCounted).toEqual([reason]);
        expect(r.released).toEqual([]);
      },
    );

    it('loads the delivery only once the gate let the job in, unless the gate expects to', async () => {
      expect((await attempt({ answers: [ok()] })).order).toEqual(['admit', 'load']);
      const r = await attempt({ answers: [ok()], expectsAdmission: true });
      expect(r.order).toEqual(['load', 'admit']);
      expect(r.sent).toHaveLength(1);
      expect(r.value).toMatchObject({ outcome: 'delivered' });
    });

    it('defers a job turned away although the gate expected to let it in: the early load is its only cost', async () => {
      const r = await attempt({ admission: { admitted: false, reason: 'target_busy', delayMs: 500 }, answers: [ok()], expectsAdmission: true });
      expect(r.error).toBeInstanceOf(DelayedError);
      expect(r.loads).toBe(1);
      expect(r.sent).toHaveLength(0);
      expect(r.recorded).toHaveLength(0);
      expect(r.deferrals).toEqual([{ deliveryId: 'd-1', reason: 'target_busy' }]);
    });

    it.each([
      ['a 200', [ok()] as Answer[], 'success'],
      ['a timeout', [new OutboundRequestError('timeout', 'no answer')], 'failure'],
      ['a refused connection', [new OutboundRequestError('connection', 'refused', 'ECONNREFUSED')], 'failure'],
      ['a TLS failure', [new OutboundRequestError('tls', 'bad certificate', 'CERT_HAS_EXPIRED')], 'failure'],
      ['an HTTP 500', [status(500)], 'answer'],
      ['a redirect', [status(302)], 'answer'],
      ['an address refused by the guard', [new OutboundRequestError('address_refused', 'private address')], 'neutral'],
    ] as Array<[string, Answer[], GateVerdict]>)('frees the slot of a job let in after %s, telling the breaker %s', async (_case, answers, verdict) => {
      const r = await attempt({ answers });
      expect(r.released).toEqual([{ targetId: 't-1', jobId: 'd-1', verdict }]);
    });

    it.each([
      ['the target is switched off', { target: { ...programTarget, enabled: false } }],
      ['the delivery succeeded already', { status: 'succeeded' }],
      ['the delivery does not exist', { missing: true }],
    ] as Array<[string, Scene]>)('frees the slot without a verdict when %s (nothing was sent)', async (_case, scene) => {
      const r = await attempt(scene);
      expect(r.released).toEqual([{ targetId: 't-1', jobId: 'd-1', verdict: 'neutral' }]);
    });
  });
});

/** A stored target as the repository loads it for an attempt. */
function loaded(target: DeliveryTarget | CredentialsCipherError | null): DeliveryWork['target'] {
  if (target === null) return { state: 'missing' };
  if (target instanceof CredentialsCipherError) return { state: 'unreadable', message: target.message };
  return { state: 'ready', target };
}
