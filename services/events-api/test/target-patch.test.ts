import { randomUUID } from 'node:crypto';
import { credentialsCipherFromConfig, targetRepository, type TargetOwner } from '@herald/db';
import { waitFor } from '@herald/testing';
import { createTestApi } from './support/api';

const api = createTestApi();
const guarded = createTestApi({ ALLOW_PRIVATE_TARGETS: 'false', TARGET_HOST_ALLOWLIST: 'localhost' });
afterAll(() => Promise.all([api.close(), guarded.close()]));

const path = (merchantId: string) => `/merchants/${merchantId}/notification-target`;

/** What the worker would send: the stored settings with the credentials decrypted. */
function stored(owner: TargetOwner) {
  return targetRepository(api.databases.ingest, credentialsCipherFromConfig(api.config)).findInput(owner);
}

/** A merchant with a basic-auth target, and its password. */
async function merchantWithTarget(): Promise<{ merchantId: string; password: string }> {
  const { merchantId } = await api.createTenant();
  const password = `secret-${randomUUID()}`;
  await api
    .admin('put', path(merchantId))
    .send({ url: 'https://shop.example/hooks', auth: { mode: 'basic', username: 'shop', password }, notifications: { eventTypes: ['created'] } })
    .expect(200);
  return { merchantId, password };
}

describe('PATCH /admin/{programs|merchants}/:id/notification-target (JSON merge patch)', () => {
  it('changes the URL and switches the target off and on while keeping the credentials', async () => {
    const { merchantId, password } = await merchantWithTarget();
    const owner = { kind: 'merchant', merchantId } as const;

    const moved = await api.admin('patch', path(merchantId)).send({ url: 'https://shop.example/v2/hooks' });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ url: 'https://shop.example/v2/hooks', auth: { mode: 'basic', username: 'shop', password: '********' }, enabled: true });
    expect(JSON.stringify(moved.body)).not.toContain(password);

    const off = await api.admin('patch', path(merchantId)).send({ enabled: false });
    expect(off.body).toMatchObject({ enabled: false, disabledReason: null, disabledAt: expect.any(String) });
    const on = await api
      .admin('patch', path(merchantId))
      .set('content-type', 'application/merge-patch+json')
      .send(JSON.stringify({ enabled: true }));
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ enabled: true, disabledAt: null });

    expect(await stored(owner)).toEqual({
      url: 'https://shop.example/v2/hooks',
      auth: { mode: 'basic', username: 'shop', password },
      notifications: { eventTypes: ['created'] },
      enabled: true,
      ordering: 'none',
    });
  });

  it("keeps an OAuth target's tokenRequest and scope when another auth field changes, and changes the token request style", async () => {
    const { merchantId } = await api.createTenant();
    const owner = { kind: 'merchant', merchantId } as const;
    const auth = {
      mode: 'oauth',
      authUrl: 'https://auth.shop.example/token',
      username: 'shop',
      password: 'pw-0123456789',
      tokenRequest: 'form',
      scope: 'hooks',
    };
    await api
      .admin('put', `${path(merchantId)}?verify=false`)
      .send({ url: 'https://shop.example/hooks', auth })
      .expect(200);

    const newPassword = await api.admin('patch', path(merchantId)).send({ auth: { password: 'pw-9876543210' } });
    expect(newPassword.status).toBe(200);
    expect(newPassword.body.auth).toMatchObject({ tokenRequest: 'form', scope: 'hooks' });

    const style = await api.admin('patch', path(merchantId)).send({ auth: { tokenRequest: 'client_secret_post', scope: null } });
    expect(style.status).toBe(200);
    expect((await stored(owner))?.auth).toEqual({ ...auth, password: 'pw-9876543210', tokenRequest: 'client_secret_post', scope: undefined });
  });

  it('merges filters member by member, and null removes one (all types again)', async () => {
    const { merchantId } = await merchantWithTarget();
    const added = await api.admin('patch', path(merchantId)).send({ notifications: { objectTypes: ['payment'] } });
    expect(added.body.notifications).toEqual({ objectTypes: ['payment'], eventTypes: ['created'] });
    const removed = await api.admin('patch', path(merchantId)).send({ notifications: { eventTypes: null } });
    expect(removed.body.notifications).toEqual({ objectTypes: ['payment'] });
    const cleared = await api.admin('patch', path(merchantId)).send({ notifications: null });
    expect(cleared.body.notifications).toEqual({});
  });

  it('switches ordering per object on and off, keeps it through other patches, and refuses an unknown value naming /ordering', async () => {
    const { merchantId, password } = await merchantWithTarget();
    const on = await api.admin('patch', path(merchantId)).send({ ordering: 'object' });
    expect(on.status).toBe(200);
    expect(on.body.ordering).toBe('object');
    const other = await api.admin('patch', path(merchantId)).send({ url: 'https://shop.example/hooks/v2' });
    expect(other.body.ordering).toBe('object');
    expect((await stored({ kind: 'merchant', merchantId }))!).toMatchObject({ ordering: 'object', auth: { password } });
    const refused = await api.admin('patch', path(merchantId)).send({ ordering: 'fifo' });
    expect(refused.status).toBe(400);
    expect(refused.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/ordering']);
    const off = await api.admin('patch', path(merchantId)).send({ ordering: 'none' });
    expect(off.body.ordering).toBe('none');
    // A PUT replaces the whole target: without ordering it is back to none.
    await api.admin('patch', path(merchantId)).send({ ordering: 'object' }).expect(200);
    const put = await api.admin('put', path(merchantId)).send({ url: 'https://shop.example/hooks', auth: { mode: 'none' } });
    expect(put.body.ordering).toBe('none');
  });

  it('replaces the password only when a new one is given, and keeps the credentials when basic becomes oauth', async () => {
    const { merchantId } = await merchantWithTarget();
    const owner = { kind: 'merchant', merchantId } as const;
    const newPassword = `new-${randomUUID()}`;
    await api
      .admin('patch', path(merchantId))
      .send({ auth: { password: newPassword } })
      .expect(200);
    expect((await stored(owner))!.auth).toEqual({ mode: 'basic', username: 'shop', password: newPassword });

    const oauth = await api.admin('patch', path(merchantId)).send({ auth: { mode: 'oauth', authUrl: 'https://shop.example/token' } });
    expect(oauth.status).toBe(200);
    expect((await stored(owner))!.auth).toEqual({
      mode: 'oauth',
      authUrl: 'https://shop.example/token',
      tokenRequest: 'spec',
      username: 'shop',
      password: newPassword,
    });

    const none = await api.admin('patch', path(merchantId)).send({ auth: { mode: 'none' } });
    expect(none.body.auth).toEqual({ mode: 'none' });
    // From none, a mode with credentials needs them.
    const refused = await api.admin('patch', path(merchantId)).send({ auth: { mode: 'basic', username: 'shop' } });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([expect.objectContaining({ pointer: '/auth/password' })]);
  });

  it.each([
    [{}, ''],
    [{ colour: 'red' }, '/colour'],
    [{ url: null }, '/url'],
    [{ url: 'ftp://shop.example/' }, '/url'],
    [{ enabled: 'yes' }, '/enabled'],
    [{ notifications: { objectTypes: ['subscription'] } }, '/notifications/objectTypes/0'],
    [{ auth: { mode: 'digest' } }, '/auth/mode'],
  ])('refuses %j with 400 problem+json naming %s', async (body, pointer) => {
    const { merchantId, password } = await merchantWithTarget();
    const res = await api.admin('patch', path(merchantId)).send(body);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ pointer })]));
    expect(JSON.stringify(res.body)).not.toContain(password);
  });

  it('keeps both of two concurrent patches to different fields (no lost update)', async () => {
    const { merchantId } = await merchantWithTarget();
    const owner = { kind: 'merchant', merchantId } as const;
    // Hold the target's row so that both PATCHes reach the database before either can write.
    const blocker = await api.databases.ingest.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM notification_targets WHERE owner_key = $1 FOR UPDATE', [`merchant:${merchantId}`]);
      const moved = api
        .admin('patch', path(merchantId))
        .send({ url: 'https://shop.example/v3/hooks' })
        .then((r) => r);
      const switchedOff = api
        .admin('patch', path(merchantId))
        .send({ enabled: false })
        .then((r) => r);
      await waitFor(
        async () =>
          (
            await api.prisma.$queryRaw<
              Array<{ n: bigint }>
            >`SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND query ILIKE '%notification_targets%'`
          )[0]!.n,
        (n) => n === 2n,
        5_000,
        'both PATCHes to wait on the locked target',
      );
      await blocker.query('COMMIT');
      expect((await moved).status).toBe(200);
      expect((await switchedOff).status).toBe(200);
    } finally {
      blocker.release();
    }
    expect(await stored(owner)).toMatchObject({ url: 'https://shop.example/v3/hooks', enabled: false });
  });

  it('answers 404 for an owner without a target', async () => {
    const { merchantId } = await api.createTenant();
    expect((await api.admin('patch', path(merchantId)).send({ enabled: false })).status).toBe(404);
    expect((await api.admin('patch', path('no such merchant!')).send({ enabled: false })).status).toBe(404);
  });

  it('checks only the URLs a patch sets, so a target whose host is refused can still be switched off', async () => {
    const { merchantId } = await guarded.createTenant();
    await guarded
      .admin('put', path(merchantId))
      .send({ url: 'http://localhost/hooks', auth: { mode: 'none' } })
      .expect(200);
    const refused = await guarded.admin('patch', path(merchantId)).send({ url: 'http://127.0.0.1/hooks' });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([expect.objectContaining({ pointer: '/url' })]);
    // Stored while allowed; refused now (the allowlist changed, or the host resolves elsewhere).
    await guarded.prisma.notificationTarget.updateMany({ where: { merchantId }, data: { url: 'http://127.0.0.1/hooks' } });
    expect((await guarded.admin('patch', path(merchantId)).send({ enabled: false })).body).toMatchObject({ enabled: false, url: 'http://127.0.0.1/hooks' });
  });
});

describe('GET /admin/notification-targets', () => {
  it("lists a program's targets, the program's own first, with paging, and one merchant's", async () => {
    const { programId, merchantId } = await api.createTenant();
    await api
      .admin('put', `/programs/${programId}/notification-target`)
      .send({ url: 'https://program.example/hooks', auth: { mode: 'none' } })
      .expect(200);
    await api
      .admin('put', path(merchantId))
      .send({ url: 'https://shop.example/hooks', auth: { mode: 'none' } })
      .expect(200);

    const all = await api.admin('get', `/notification-targets?programId=${programId}`);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ page: 1, pageSize: 20, count: 2, totalPages: 1 });
    expect(all.body.data.map((t: { merchantId: string | null }) => t.merchantId)).toEqual([null, merchantId]);

    const second = await api.admin('get', `/notification-targets?programId=${programId}&page=2&pageSize=1`);
    expect(second.body).toMatchObject({ page: 2, pageSize: 1, count: 2, data: [{ merchantId }] });
    const one = await api.admin('get', `/notification-targets?merchantId=${merchantId}`);
    expect(one.body).toMatchObject({ count: 1, data: [{ url: 'https://shop.example/hooks', health: { lastSuccessAt: null, failingSince: null } }] });
  });

  it('refuses an unknown parameter with 400 naming it', async () => {
    const res = await api.admin('get', '/notification-targets?program=p1');
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ parameter: 'program' })]);
  });
});
