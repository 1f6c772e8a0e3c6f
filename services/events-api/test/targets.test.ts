import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { MASKED_PASSWORD } from '@herald/db';
import { EVENT_TYPES, MERCHANT_NOTIFICATION_OBJECT_TYPES } from '@herald/domain';
import { createRedisConnection, createTargetGate, pingRedis } from '@herald/queue';
import { closedPort } from '@herald/testing';
import { createTestApi, type TestApi } from './support/api';

const api = createTestApi();
const guarded = createTestApi({ ALLOW_PRIVATE_TARGETS: 'false', TARGET_HOST_ALLOWLIST: 'localhost, hooks.internal.example' });
afterAll(() => Promise.all([api.close(), guarded.close()]));

type Owner = { programId: string } | { merchantId: string };

function targetPath(owner: Owner): string {
  return 'merchantId' in owner ? `/admin/merchants/${owner.merchantId}/notification-target` : `/admin/programs/${owner.programId}/notification-target`;
}

/**
 * PUT, GET or DELETE of an owner's notification target, with the admin token, on `on`'s app. A PUT
 * skips the OAuth credential check (?verify=false): these tests are about storing targets, and no
 * token endpoint answers at their example hosts (target-checks.test.ts tests the check).
 */
function target(method: 'put' | 'get' | 'delete', owner: Owner, body?: object, on: { app: TestApi['app']; config: TestApi['config'] } = api) {
  const path = method === 'put' ? `${targetPath(owner)}?verify=false` : targetPath(owner);
  const req = request(on.app)[method](path).set('Authorization', `Bearer ${on.config.adminToken}`);
  return body === undefined ? req : req.send(body);
}

/** A fresh program with one merchant. */
async function newTenant(on: TestApi = api): Promise<{ programId: string; merchantId: string }> {
  const { programId, merchantId } = await on.createTenant();
  return { programId, merchantId };
}

const newPassword = () => `secret-${randomUUID()}`;

const AUTH_MODES = [
  ['none', () => ({ mode: 'none' })],
  ['basic', (password: string) => ({ mode: 'basic', username: 'shop-user', password })],
  ['oauth', (password: string) => ({ mode: 'oauth', authUrl: 'https://auth.merchant.example/token', username: 'client-1', password })],
] as const;

/** The health of a target nothing was sent to. */
const QUIET_HEALTH = {
  lastSuccessAt: null,
  failingSince: null,
  breaker: { state: 'closed', consecutiveFailures: 0, openedAt: null, halfOpenAt: null, probeInFlight: false },
  inFlight: 0,
  deferred: 0,
  pausedUntil: null,
  window: null,
};

describe('PUT, GET and DELETE /admin/{programs|merchants}/:id/notification-target', () => {
  describe.each(['program', 'merchant'] as const)('for a %s', (kind) => {
    it.each(AUTH_MODES)('stores a target with %s auth, shows it with the password masked, and deletes it', async (mode, auth) => {
      const tenant = await newTenant();
      const owner = kind === 'program' ? { programId: tenant.programId } : { merchantId: tenant.merchantId };
      const password = newPassword();
      const body = { url: 'https://merchant.example/hooks', auth: auth(password), notifications: { eventTypes: ['created', 'updated'] } };

      const put = await target('put', owner, body);
      expect(put.status).toBe(200);
      const expectedAuth = mode === 'none' ? { mode } : { ...auth(password), password: MASKED_PASSWORD, ...(mode === 'oauth' ? { tokenRequest: 'spec' } : {}) };
      expect(put.body).toEqual({
        id: expect.any(String),
        programId: tenant.programId,
        merchantId: kind === 'merchant' ? tenant.merchantId : null,
        url: body.url,
        auth: expectedAuth,
        notifications: { eventTypes: ['created', 'updated'] },
        enabled: true,
        ordering: 'none',
        disabledReason: null,
        disabledAt: null,
        // No policy of its own: every value is the global default.
        delivery: {},
        effectiveDelivery: {
          attempts: { value: 22, source: 'default' },
          maxBackoffMs: { value: 21_600_000, source: 'default' },
          timeoutMs: { value: 10_000, source: 'default' },
          maxInFlight: { value: 16, source: 'default' },
          maxRatePerSecond: { value: null, source: 'default' },
        },
        health: { lastSuccessAt: null, failingSince: null },
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });

      const get = await target('get', owner);
      expect(get.status).toBe(200);
      expect(get.body).toEqual({ ...put.body, health: QUIET_HEALTH });
      expect(`${put.text}${get.text}`).not.toContain(password);

      expect((await target('delete', owner)).status).toBe(204);
      expect((await target('get', owner)).status).toBe(404);
      expect((await target('delete', owner)).status).toBe(404);
    });
  });

  it('keeps only ciphertext of the credentials in the stored row', async () => {
    const { programId } = await newTenant();
    const password = newPassword();
    const put = await target('put', { programId }, { url: 'https://merchant.example/hooks', auth: { mode: 'basic', username: 'u', password } });
    const [row] = await api.prisma.$queryRaw<Array<Record<string, unknown>>>`SELECT * FROM notification_targets WHERE id = ${put.body.id}::uuid`;
    expect(row).toMatchObject({ credentials: expect.stringMatching(/^v1\.k1\./), credentials_key_id: 'k1' });
    expect(JSON.stringify(row)).not.toContain(password);
    expect(JSON.stringify(row)).not.toContain(Buffer.from(password).toString('base64'));
  });

  it('treats absent notification lists as all, and says so by leaving them out', async () => {
    const { programId, merchantId } = await newTenant();
    for (const owner of [{ programId }, { merchantId }]) {
      const put = await target('put', owner, { url: 'https://merchant.example/hooks', auth: { mode: 'none' } });
      expect(put.status).toBe(200);
      expect(put.body.notifications).toEqual({});
      const row = await api.prisma.notificationTarget.findUniqueOrThrow({ where: { id: put.body.id } });
      expect(row).toMatchObject({ objectTypes: [], eventTypes: [] });
    }
  });

  it('replaces the whole target on a second PUT, and revives a deleted one with the same id', async () => {
    const { merchantId } = await newTenant();
    const first = await target('put', { merchantId }, { url: 'https://a.example/1', auth: { mode: 'basic', username: 'u', password: 'p' } });
    const second = await target(
      'put',
      { merchantId },
      {
        url: 'https://b.example/2',
        auth: { mode: 'none' },
        notifications: { objectTypes: ['refund'], eventTypes: [...EVENT_TYPES] },
        enabled: false,
      },
    );
    expect(second.body).toMatchObject({ id: first.body.id, url: 'https://b.example/2', auth: { mode: 'none' }, enabled: false });
    expect(second.body.notifications).toEqual({ objectTypes: ['refund'], eventTypes: [...EVENT_TYPES] });

    await target('delete', { merchantId }).expect(204);
    const revived = await target('put', { merchantId }, { url: 'https://c.example/3', auth: { mode: 'none' } });
    expect(revived.body).toMatchObject({ id: first.body.id, url: 'https://c.example/3', enabled: true });
    const row = await api.prisma.notificationTarget.findUniqueOrThrow({ where: { id: first.body.id } });
    expect(row.deletedAt).toBeNull();
  });

  it('keeps a deleted target as a switched-off row', async () => {
    const { programId } = await newTenant();
    const put = await target('put', { programId }, { url: 'https://merchant.example/hooks', auth: { mode: 'none' } });
    await target('delete', { programId }).expect(204);
    const row = await api.prisma.notificationTarget.findUniqueOrThrow({ where: { id: put.body.id } });
    expect(row).toMatchObject({ enabled: false, deletedAt: expect.any(Date) });
  });

  it('lets a merchant target choose among the transaction-related object types only', async () => {
    const { merchantId, programId } = await newTenant();
    const ok = await target(
      'put',
      { merchantId },
      {
        url: 'https://merchant.example/hooks',
        auth: { mode: 'none' },
        notifications: { objectTypes: [...MERCHANT_NOTIFICATION_OBJECT_TYPES] },
      },
    );
    expect(ok.status).toBe(200);

    const refused = await target(
      'put',
      { merchantId },
      {
        url: 'https://merchant.example/hooks',
        auth: { mode: 'none' },
        notifications: { objectTypes: ['payment', 'subscription', 'refund', 'payment-series'] },
      },
    );
    expect(refused.status).toBe(400);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/notifications/objectTypes/1', '/notifications/objectTypes/3']);
    expect(refused.body.errors[0].message).toBe(
      `must be one of: ${MERCHANT_NOTIFICATION_OBJECT_TYPES.join(', ')}. A merchant's target takes transaction-related object types only; ` +
        "events of every object type go to the program's target (PUT /admin/programs/{programId}/notification-target)",
    );

    const program = await target(
      'put',
      { programId },
      {
        url: 'https://merchant.example/hooks',
        auth: { mode: 'none' },
        notifications: { objectTypes: ['subscription', 'subscription.plan'] },
      },
    );
    expect(program.status).toBe(200);
  });

  it.each([
    ['a missing url and auth', {}, ['/url', '/auth']],
    ['an unknown property', { url: 'https://m.example/', auth: { mode: 'none' }, colour: 'red' }, ['/colour']],
    ['an unknown auth mode', { url: 'https://m.example/', auth: { mode: 'digest' } }, ['/auth/mode']],
    ['credentials with no auth', { url: 'https://m.example/', auth: { mode: 'none', username: 'u' } }, ['/auth/username']],
    ['basic auth without a password', { url: 'https://m.example/', auth: { mode: 'basic', username: 'u' } }, ['/auth/password']],
    ['a colon in the username', { url: 'https://m.example/', auth: { mode: 'basic', username: 'a:b', password: 'p' } }, ['/auth/username']],
    ['an empty password', { url: 'https://m.example/', auth: { mode: 'basic', username: 'u', password: '' } }, ['/auth/password']],
    ['a password of 256 characters', { url: 'https://m.example/', auth: { mode: 'basic', username: 'u', password: 'p'.repeat(256) } }, ['/auth/password']],
    ['a username of 256 characters', { url: 'https://m.example/', auth: { mode: 'basic', username: 'u'.repeat(256), password: 'p' } }, ['/auth/username']],
    ['oauth without an authUrl', { url: 'https://m.example/', auth: { mode: 'oauth', username: 'u', password: 'p' } }, ['/auth/authUrl']],
    [
      'an authUrl with basic auth',
      { url: 'https://m.example/', auth: { mode: 'basic', username: 'u', password: 'p', authUrl: 'https://a.example/' } },
      ['/auth/authUrl'],
    ],
    ['an empty objectTypes list', { url: 'https://m.example/', auth: { mode: 'none' }, notifications: { objectTypes: [] } }, ['/notifications/objectTypes']],
    [
      'an unknown event type',
      { url: 'https://m.example/', auth: { mode: 'none' }, notifications: { eventTypes: ['created', 'exploded'] } },
      ['/notifications/eventTypes/1'],
    ],
    [
      'a repeated event type',
      { url: 'https://m.example/', auth: { mode: 'none' }, notifications: { eventTypes: ['created', 'created'] } },
      ['/notifications/eventTypes'],
    ],
    ['enabled as a string', { url: 'https://m.example/', auth: { mode: 'none' }, enabled: 'yes' }, ['/enabled']],
    ['an unknown ordering', { url: 'https://m.example/', auth: { mode: 'none' }, ordering: 'event' }, ['/ordering']],
    ['a url that is not http(s)', { url: 'ftp://m.example/', auth: { mode: 'none' } }, ['/url']],
    ['a relative url', { url: '/hooks', auth: { mode: 'none' } }, ['/url']],
    ['a url with user info', { url: 'https://user:pw@m.example/', auth: { mode: 'none' } }, ['/url']],
    ['a url with spaces', { url: 'https://m.example/a b', auth: { mode: 'none' } }, ['/url']],
    ['a url of 2049 characters', { url: `https://m.example/${'a'.repeat(2049 - 18)}`, auth: { mode: 'none' } }, ['/url']],
    [
      'an unknown tokenRequest',
      { url: 'https://m.example/', auth: { mode: 'oauth', authUrl: 'https://a.example/', username: 'u', password: 'p', tokenRequest: 'xml' } },
      ['/auth/tokenRequest'],
    ],
    [
      'a scope with a double space',
      { url: 'https://m.example/', auth: { mode: 'oauth', authUrl: 'https://a.example/', username: 'u', password: 'p', scope: 'a  b' } },
      ['/auth/scope'],
    ],
    ['a scope with basic auth', { url: 'https://m.example/', auth: { mode: 'basic', username: 'u', password: 'p', scope: 'a' } }, ['/auth/scope']],
    ['a tokenRequest with no auth', { url: 'https://m.example/', auth: { mode: 'none', tokenRequest: 'form' } }, ['/auth/tokenRequest']],
    [
      'an authUrl that is not http(s)',
      { url: 'https://m.example/', auth: { mode: 'oauth', authUrl: 'mailto:a@b.c', username: 'u', password: 'p' } },
      ['/auth/authUrl'],
    ],
  ])('rejects %s with 400 problem+json naming the field', async (_case, body, pointers) => {
    const { programId } = await newTenant();
    const res = await target('put', { programId }, body);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual([...pointers].sort());
  });

  it('accepts a url of exactly 2048 characters', async () => {
    const { programId } = await newTenant();
    const url = `https://m.example/${'a'.repeat(2048 - 18)}`;
    expect(url).toHaveLength(2048);
    expect((await target('put', { programId }, { url, auth: { mode: 'none' } })).status).toBe(200);
  });

  it('answers 404 problem+json for an unknown program or merchant', async () => {
    const body = { url: 'https://merchant.example/hooks', auth: { mode: 'none' } };
    for (const owner of [{ programId: `nobody-${randomUUID()}` }, { merchantId: `nobody-${randomUUID()}` }, { programId: 'bad%20id' }]) {
      for (const res of [await target('put', owner, body), await target('get', owner), await target('delete', owner)]) {
        expect(res.status).toBe(404);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.body.type).toBe('/problems/not_found');
      }
    }
  });

  it('answers 404 for a program or merchant without a target', async () => {
    const { programId, merchantId } = await newTenant();
    expect((await target('get', { programId })).body).toMatchObject({ status: 404, detail: `No notification target for program "${programId}".` });
    expect((await target('get', { merchantId })).status).toBe(404);
  });

  it('refuses every operation without the admin token', async () => {
    const { programId } = await newTenant();
    const res = await request(api.app)
      .put(targetPath({ programId }))
      .send({ url: 'https://m.example/', auth: { mode: 'none' } });
    expect(res.status).toBe(401);
    expect((await request(api.app).get(targetPath({ programId }))).status).toBe(401);
    expect((await request(api.app).delete(targetPath({ programId }))).status).toBe(401);
  });
});

describe('the health of a notification target', () => {
  it.each(['program', 'merchant'] as const)(
    "shows the %s target's breaker state, callbacks in flight and deferred, as the workers left them in Redis",
    async (kind) => {
      const tenant = await newTenant();
      const owner = kind === 'program' ? { programId: tenant.programId } : { merchantId: tenant.merchantId };
      const { id } = (await target('put', owner, { url: 'https://merchant.example/hooks', auth: { mode: 'none' } })).body as { id: string };
      const redis = createRedisConnection(api.config.redisUrl, { role: 'client' });
      try {
        await pingRedis(redis);
        // Two workers' worth of state: one breaker opened by 2 failures, then one callback deferred.
        const gate = createTargetGate(redis, {
          queuePrefix: api.config.queuePrefix,
          settings: {
            maxInFlight: 1,
            leaseMs: 60_000,
            breaker: { failures: 2, ratio: 0, windowMs: 60_000, minRequests: 10, openMs: 30_000, openMaxMs: 60_000 },
          },
        });
        await gate.admit([{ targetId: id, jobId: 'j1' }]);
        expect(await gate.admit([{ targetId: id, jobId: 'j2' }])).toEqual([expect.objectContaining({ reason: 'target_busy' })]);
        expect((await target('get', owner)).body.health).toEqual({ ...QUIET_HEALTH, inFlight: 1, deferred: 1 });
        await gate.release([{ targetId: id, jobId: 'j1', verdict: 'failure', durationMs: 10 }]);
        await gate.admit([{ targetId: id, jobId: 'j3' }]);
        await gate.release([{ targetId: id, jobId: 'j3', verdict: 'failure', durationMs: 10 }]);
        await gate.admit([{ targetId: id, jobId: 'j4' }]);

        const { health } = (await target('get', owner)).body as { health: { breaker: { openedAt: string; halfOpenAt: string } } };
        expect(health).toEqual({
          lastSuccessAt: null,
          failingSince: null,
          breaker: { state: 'open', consecutiveFailures: 0, openedAt: expect.any(String), halfOpenAt: expect.any(String), probeInFlight: false },
          inFlight: 0,
          deferred: 2,
          pausedUntil: null,
          window: null,
        });
        expect(Date.parse(health.breaker.halfOpenAt) - Date.parse(health.breaker.openedAt)).toBe(30_000);
      } finally {
        redis.disconnect();
      }
    },
  );

  it('shows the target with its stored health, and the Redis part null, while Redis cannot be read', async () => {
    const down = createTestApi({ REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
    try {
      const tenant = await down.createTenant();
      const put = await down
        .admin('put', `/programs/${tenant.programId}/notification-target`)
        .send({ url: 'https://merchant.example/hooks', auth: { mode: 'none' } });
      expect(put.status).toBe(200);
      const get = await down.admin('get', `/programs/${tenant.programId}/notification-target`);
      expect(get.status).toBe(200);
      expect(get.body).toEqual({
        ...put.body,
        health: { lastSuccessAt: null, failingSince: null, breaker: null, inFlight: null, deferred: null, pausedUntil: null, window: null },
      });
    } finally {
      await down.close();
    }
  });
});

describe('secrets of notification targets', () => {
  it('never appear in logs or responses, whatever the outcome of the request', async () => {
    const { programId, merchantId } = await newTenant();
    const password = newPassword();
    const responses = [
      await target('put', { programId }, { url: 'https://m.example/', auth: { mode: 'basic', username: 'u', password } }),
      await target('put', { merchantId }, { url: 'https://m.example/', auth: { mode: 'oauth', authUrl: 'https://m.example/t', username: 'u', password } }),
      await target('put', { programId }, { url: 'not a url', auth: { mode: 'basic', username: 'u:x', password } }),
      await target('put', { programId }, { url: 'https://m.example/', auth: { mode: 'none', password } }),
      await target('put', { programId: 'nobody-here' }, { url: 'https://m.example/', auth: { mode: 'basic', username: 'u', password } }),
      await target('get', { programId }, undefined),
      await target('get', { merchantId }, undefined),
      await target('delete', { programId }, undefined),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 200, 400, 400, 404, 200, 200, 204]);
    expect(api.logs()).toContain('"path":"/admin/programs/');
    expect(api.logs()).not.toContain(password);
    for (const res of responses) expect(res.text).not.toContain(password);
  });

  it('answer 500 without leaking anything when stored credentials cannot be decrypted', async () => {
    const { programId } = await newTenant();
    const password = newPassword();
    const put = await target('put', { programId }, { url: 'https://m.example/', auth: { mode: 'basic', username: 'u', password } });
    // A ciphertext copied from another row: it decrypts only for the target it was written for.
    const other = await newTenant();
    const donor = await target('put', { programId: other.programId }, { url: 'https://m.example/', auth: { mode: 'basic', username: 'u', password } });
    const { credentials } = await api.prisma.notificationTarget.findUniqueOrThrow({ where: { id: donor.body.id } });
    await api.prisma.notificationTarget.update({ where: { id: put.body.id }, data: { credentials } });

    const res = await target('get', { programId }, undefined);
    expect(res.status).toBe(500);
    expect(res.text).not.toContain(password);
    expect(api.logs()).toContain('cannot be decrypted: authentication failed');
    expect(api.logs()).not.toContain(password);
  });
});

describe('the SSRF guard when private targets are not allowed', () => {
  it.each([
    ['http://127.0.0.1/hook', /loopback/],
    ['http://127.1.2.3:8080/hook', /loopback/],
    ['http://10.0.0.1/hook', /private/],
    ['http://172.16.5.5/hook', /private/],
    ['http://192.168.1.1/hook', /private/],
    ['http://169.254.169.254/latest/meta-data/', /cloud metadata/],
    ['http://169.254.1.1/hook', /link-local/],
    ['http://100.64.0.1/hook', /CGNAT/],
    ['http://0.0.0.0/hook', /unspecified/],
    ['http://[::1]/hook', /loopback/],
    ['http://[::]/hook', /unspecified/],
    ['http://[fd00:ec2::254]/hook', /cloud metadata/],
    ['http://[fc00::1]/hook', /private/],
    ['http://[fe80::1]/hook', /link-local/],
    ['http://[::ffff:127.0.0.1]/hook', /loopback/],
    ['http://[::ffff:a00:1]/hook', /private/],
    ['http://[64:ff9b::a9fe:a9fe]/hook', /cloud metadata/],
    ['http://[::ffff:0:127.0.0.1]/hook', /loopback/],
    ['http://[fec0::1]/hook', /site-local/],
    ['http://[2002:7f00:1::]/hook', /loopback/],
    ['http://2130706433/hook', /loopback/],
    ['http://0x7f.1/hook', /loopback/],
  ])('refuses %s with 400 naming the field', async (url, reason) => {
    const { programId } = await newTenant(guarded);
    const res = await target('put', { programId }, { url, auth: { mode: 'none' } }, guarded);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.errors).toEqual([{ pointer: '/url', message: expect.stringMatching(reason) }]);
  });

  it('refuses a host name that resolves to loopback', async () => {
    const unlisted = createTestApi({ ALLOW_PRIVATE_TARGETS: 'false' });
    try {
      const { programId } = await newTenant(unlisted);
      const res = await target('put', { programId }, { url: 'http://localhost:8080/hook', auth: { mode: 'none' } }, unlisted);
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ pointer: '/url', message: expect.stringMatching(/^must not point at a loopback address: localhost \(/) }]);
    } finally {
      await unlisted.close();
    }
  });

  it('checks the OAuth Authentication URL as well', async () => {
    const { merchantId } = await newTenant(guarded);
    const res = await target(
      'put',
      { merchantId },
      { url: 'https://93.184.215.14/hook', auth: { mode: 'oauth', authUrl: 'http://10.1.2.3/token', username: 'u', password: 'p' } },
      guarded,
    );
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ pointer: '/auth/authUrl', message: expect.stringMatching(/private/) }]);
  });

  it('refuses a host name that does not resolve', async () => {
    const { programId } = await newTenant(guarded);
    const res = await target('put', { programId }, { url: 'https://no-such-host.invalid/hook', auth: { mode: 'none' } }, guarded);
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ pointer: '/url', message: 'host no-such-host.invalid could not be resolved' }]);
  });

  it('lets a public address through', async () => {
    const { programId } = await newTenant(guarded);
    const res = await target('put', { programId }, { url: 'https://93.184.215.14/hook', auth: { mode: 'none' } }, guarded);
    expect(res.status).toBe(200);
  });

  it('lets a host of TARGET_HOST_ALLOWLIST through, whatever it resolves to', async () => {
    const { programId, merchantId } = await newTenant(guarded);
    const local = await target('put', { programId }, { url: 'http://LOCALHOST:8080/hook', auth: { mode: 'none' } }, guarded);
    expect(local.status).toBe(200);
    const internal = await target('put', { merchantId }, { url: 'https://hooks.internal.example./in', auth: { mode: 'none' } }, guarded);
    expect(internal.status).toBe(200);
  });

  it('allows private targets by default outside production', async () => {
    expect(api.config.allowPrivateTargets).toBe(true);
    const { programId } = await newTenant();
    expect((await target('put', { programId }, { url: 'http://127.0.0.1:9/hook', auth: { mode: 'none' } })).status).toBe(200);
  });
});
