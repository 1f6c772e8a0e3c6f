import { credentialsCipherFromConfig, targetRepository } from '@herald/db';
import { createTestApi } from './support/api';

// Global defaults of this API, so that the effective policy shows them as such.
const api = createTestApi({ DELIVERY_ATTEMPTS: '7', DELIVERY_BACKOFF_MAX_MS: '600000', CALLBACK_TIMEOUT_MS: '4000', TARGET_MAX_IN_FLIGHT: '12' });
afterAll(() => api.close());

const merchantPath = (merchantId: string) => `/merchants/${merchantId}/notification-target`;
const programPath = (programId: string) => `/programs/${programId}/notification-target`;
const TARGET = { url: 'https://shop.example/hooks', auth: { mode: 'none' } };

describe("a notification target's delivery policy (admin API)", () => {
  it("stores the fields a PUT sets and shows every value in force, each saying whether it is the target's own or the default", async () => {
    const { programId } = await api.createTenant();
    const put = await api
      .admin('put', programPath(programId))
      .send({ ...TARGET, delivery: { attempts: 3, timeoutMs: 300 } })
      .expect(200);
    const effective = {
      attempts: { value: 3, source: 'target' },
      maxBackoffMs: { value: 600_000, source: 'default' },
      timeoutMs: { value: 300, source: 'target' },
      maxInFlight: { value: 12, source: 'default' },
      maxRatePerSecond: { value: null, source: 'default' },
    };
    expect(put.body).toMatchObject({ delivery: { attempts: 3, timeoutMs: 300 }, effectiveDelivery: effective });

    const got = await api.admin('get', programPath(programId)).expect(200);
    expect(got.body.delivery).toEqual({ attempts: 3, timeoutMs: 300 });
    expect(got.body.effectiveDelivery).toEqual(effective);
    const listed = await api.admin('get', `/notification-targets?programId=${programId}`).expect(200);
    expect(listed.body.data[0]).toMatchObject({ delivery: { attempts: 3, timeoutMs: 300 }, effectiveDelivery: effective });

    // What the worker loads at each attempt.
    const stored = await targetRepository(api.databases.ingest, credentialsCipherFromConfig(api.config)).findForSending({ kind: 'program', programId });
    expect(stored?.delivery).toEqual({ attempts: 3, timeoutMs: 300 });
  });

  it('follows every default for a target without a policy, and a PUT without one clears the stored one', async () => {
    const { merchantId } = await api.createTenant();
    await api
      .admin('put', merchantPath(merchantId))
      .send({ ...TARGET, delivery: { maxInFlight: 2 } })
      .expect(200);
    const replaced = await api.admin('put', merchantPath(merchantId)).send(TARGET).expect(200);
    expect(replaced.body.delivery).toEqual({});
    expect(replaced.body.effectiveDelivery).toEqual({
      attempts: { value: 7, source: 'default' },
      maxBackoffMs: { value: 600_000, source: 'default' },
      timeoutMs: { value: 4000, source: 'default' },
      maxInFlight: { value: 12, source: 'default' },
      maxRatePerSecond: { value: null, source: 'default' },
    });
  });

  it('merges a PATCH into the stored policy: members replace, null returns one to its default, delivery null returns them all', async () => {
    const { merchantId } = await api.createTenant();
    await api
      .admin('put', merchantPath(merchantId))
      .send({ ...TARGET, delivery: { attempts: 3, maxBackoffMs: 5_000, maxInFlight: 4 } })
      .expect(200);

    const patched = await api
      .admin('patch', merchantPath(merchantId))
      .send({ delivery: { attempts: null, timeoutMs: 1_500 } })
      .expect(200);
    expect(patched.body.delivery).toEqual({ maxBackoffMs: 5_000, maxInFlight: 4, timeoutMs: 1_500 });
    expect(patched.body.effectiveDelivery.attempts).toEqual({ value: 7, source: 'default' });
    expect(patched.body.effectiveDelivery.timeoutMs).toEqual({ value: 1_500, source: 'target' });

    // A patch of another field keeps the policy.
    const moved = await api.admin('patch', merchantPath(merchantId)).send({ url: 'https://shop.example/v2' }).expect(200);
    expect(moved.body.delivery).toEqual({ maxBackoffMs: 5_000, maxInFlight: 4, timeoutMs: 1_500 });

    const cleared = await api.admin('patch', merchantPath(merchantId)).send({ delivery: null }).expect(200);
    expect(cleared.body.delivery).toEqual({});
    expect(Object.values(cleared.body.effectiveDelivery as Record<string, { source: string }>).map((v) => v.source)).toEqual([
      'default',
      'default',
      'default',
      'default',
      'default',
    ]);
  });

  it.each([
    [{ attempts: 0 }, '/delivery/attempts', 'Allowed: 1 to 100'],
    [{ attempts: 101 }, '/delivery/attempts', 'Allowed: 1 to 100'],
    [{ attempts: 2.5 }, '/delivery/attempts', 'must be integer'],
    [{ maxBackoffMs: 999 }, '/delivery/maxBackoffMs', 'Allowed: 1000 to 604800000'],
    [{ timeoutMs: 60_001 }, '/delivery/timeoutMs', 'Allowed: 100 to 60000'],
    [{ maxInFlight: 0 }, '/delivery/maxInFlight', 'Allowed: 1 to 256'],
    [{ maxInFlight: '4' }, '/delivery/maxInFlight', 'must be integer'],
    [{ maxRatePerSecond: 0.05 }, '/delivery/maxRatePerSecond', 'Allowed: 0.1 to 1000'],
    [{ maxRatePerSecond: 1_001 }, '/delivery/maxRatePerSecond', 'Allowed: 0.1 to 1000'],
    [{ retries: 3 }, '/delivery/retries', 'is not an allowed property'],
  ])('refuses a PUT with delivery %j: 400 naming %s and the allowed range', async (delivery, pointer, message) => {
    const { merchantId } = await api.createTenant();
    const res = await api
      .admin('put', merchantPath(merchantId))
      .send({ ...TARGET, delivery })
      .expect(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer, message: expect.stringContaining(message) })]);
  });

  it("takes a fractional rate, shows it as the target's own, and a PATCH null lifts it again", async () => {
    const { merchantId } = await api.createTenant();
    const put = await api
      .admin('put', merchantPath(merchantId))
      .send({ ...TARGET, delivery: { maxRatePerSecond: 0.5 } })
      .expect(200);
    expect(put.body.effectiveDelivery.maxRatePerSecond).toEqual({ value: 0.5, source: 'target' });
    const lifted = await api
      .admin('patch', merchantPath(merchantId))
      .send({ delivery: { maxRatePerSecond: null } })
      .expect(200);
    expect(lifted.body.delivery).toEqual({});
    expect(lifted.body.effectiveDelivery.maxRatePerSecond).toEqual({ value: null, source: 'default' });
  });

  it('refuses a PATCH whose merged policy is out of range, naming the field, and stores nothing', async () => {
    const { merchantId } = await api.createTenant();
    await api
      .admin('put', merchantPath(merchantId))
      .send({ ...TARGET, delivery: { attempts: 3 } })
      .expect(200);
    const res = await api
      .admin('patch', merchantPath(merchantId))
      .send({ delivery: { attempts: 500, maxInFlight: 2 } })
      .expect(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer: '/delivery/attempts', message: expect.stringContaining('Allowed: 1 to 100') })]);
    const wrongType = await api
      .admin('patch', merchantPath(merchantId))
      .send({ delivery: { timeoutMs: 'fast' } })
      .expect(400);
    expect(wrongType.body.errors).toEqual([expect.objectContaining({ pointer: '/delivery/timeoutMs' })]);
    const got = await api.admin('get', merchantPath(merchantId)).expect(200);
    expect(got.body.delivery).toEqual({ attempts: 3 });
  });
});
