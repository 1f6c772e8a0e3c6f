// The merchant portal through HTTP (supertest on the app, the real PostgreSQL and Redis): support's
// link routes, the link's exchange for a session cookie, CSRF, the session's end, and that a
// session sees only its own tenant's data. The browser test (portal.browser.test.ts) drives it in
// Chromium with a real worker.
import { createHash, randomUUID } from 'node:crypto';
import { closedPort } from '@herald/testing';
import request from 'supertest';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';
import { createFakeWorker } from './support/fake-worker';
import { expectDocumented, type OpenApiDocument } from './support/openapi';

const api = createTestApi();
const worker = createFakeWorker(api);
let internal: OpenApiDocument;
beforeAll(async () => {
  internal = (await request(api.app).get('/openapi/internal.json').expect(200)).body;
});
afterAll(async () => {
  await worker.close();
  await api.close();
});
beforeEach(() => api.deliveryQueue.drain(true));

type Tenant = Awaited<ReturnType<typeof api.createTenant>>;

/** A fresh tenant whose merchant and program each have a target. */
async function scene(): Promise<Tenant & { merchantTarget: string; programTarget: string }> {
  const tenant = await api.createTenant();
  const merchantTarget = await api
    .admin('put', `/merchants/${tenant.merchantId}/notification-target`)
    .send({ url: `https://merchant.example/hooks?token=${randomUUID()}`, auth: { mode: 'basic', username: 'shop', password: `pw-${randomUUID()}` } })
    .expect(200);
  const programTarget = await api
    .admin('put', `/programs/${tenant.programId}/notification-target`)
    .send({ url: 'https://program.example/hooks', auth: { mode: 'none' } })
    .expect(200);
  return { ...tenant, merchantTarget: merchantTarget.body.id, programTarget: programTarget.body.id };
}

async function createLink(kind: 'merchants' | 'programs', id: string): Promise<{ url: string; token: string }> {
  const res = await api.admin('post', `/${kind}/${id}/portal-links`).expect(201);
  const url = new URL(res.body.url);
  return { url: res.body.url, token: url.searchParams.get('token')! };
}

/** Exchanges a link's token, as the entry page's button does. */
const enter = (token: string) => request(api.app).post('/portal/enter').type('form').send({ token });

/** Opens a portal session for the owner: its cookie (for the Cookie header) and its CSRF token. */
async function openPortal(kind: 'merchants' | 'programs', id: string): Promise<{ cookie: string; csrf: string }> {
  const { token } = await createLink(kind, id);
  const entered = await enter(token).expect(303);
  const cookie = String(entered.headers['set-cookie']![0]).split(';', 1)[0]!;
  const overview = await request(api.app).get('/portal').set('Cookie', cookie).expect(200);
  const csrf = /name="csrf" value="([^"]+)"/.exec(overview.text)![1]!;
  return { cookie, csrf };
}

const get = (path: string, cookie?: string) => {
  const req = request(api.app).get(path);
  return cookie ? req.set('Cookie', cookie) : req;
};
const post = (path: string, cookie: string | undefined, form: Record<string, string>) => {
  const req = request(api.app).post(path).type('form');
  return (cookie ? req.set('Cookie', cookie) : req).send(form);
};

describe('POST /admin/merchants/{merchantId}/portal-links and /admin/programs/{programId}/portal-links', () => {
  it('answers 201 with a single-use link to the portal and when it expires, keeping only its hash', async () => {
    const tenant = await api.createTenant();
    const res = await api.admin('post', `/merchants/${tenant.merchantId}/portal-links`).expect(201);
    expectDocumented(internal, 'internal', '/admin/merchants/{merchantId}/portal-links', 'post', res);
    const url = new URL(res.body.url);
    expect(url.pathname).toBe('/portal/enter');
    const token = url.searchParams.get('token')!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const expiresIn = Date.parse(res.body.expiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(800_000);
    expect(expiresIn).toBeLessThanOrEqual(900_000);
    const stored = await api.prisma.portalLink.findMany({ where: { merchantId: tenant.merchantId } });
    expect(stored.map((link) => link.tokenHash)).toEqual([createHash('sha256').update(token).digest('hex')]);

    const program = await api.admin('post', `/programs/${tenant.programId}/portal-links`).send({ expiresInSeconds: 120 }).expect(201);
    expectDocumented(internal, 'internal', '/admin/programs/{programId}/portal-links', 'post', program);
    expect(Date.parse(program.body.expiresAt) - Date.now()).toBeLessThanOrEqual(120_000);
  });

  it('answers 401 without the admin token', async () => {
    const tenant = await api.createTenant();
    const res = await request(api.app).post(`/admin/merchants/${tenant.merchantId}/portal-links`).expect(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const withKey = await request(api.app)
      .post(`/admin/merchants/${tenant.merchantId}/portal-links`)
      .set('Authorization', `Bearer ${tenant.merchantKey.key}`)
      .expect(401);
    expectDocumented(internal, 'internal', '/admin/merchants/{merchantId}/portal-links', 'post', withKey);
  });

  it('answers 404 for an unknown merchant or program', async () => {
    const merchant = await api.admin('post', `/merchants/no-such-${randomUUID()}/portal-links`).expect(404);
    expectDocumented(internal, 'internal', '/admin/merchants/{merchantId}/portal-links', 'post', merchant);
    expect(merchant.body.detail).toMatch(/^No merchant "no-such-/);
    await api.admin('post', `/programs/no-such-${randomUUID()}/portal-links`).expect(404);
  });

  it('refuses a lifetime beyond PORTAL_LINK_TTL_SECONDS or an unknown field with 400 naming it', async () => {
    const tenant = await api.createTenant();
    const tooLong = await api.admin('post', `/merchants/${tenant.merchantId}/portal-links`).send({ expiresInSeconds: 901 }).expect(400);
    expectDocumented(internal, 'internal', '/admin/merchants/{merchantId}/portal-links', 'post', tooLong);
    expect(tooLong.body.errors).toEqual([{ pointer: '/expiresInSeconds', message: 'must be at most 900 (PORTAL_LINK_TTL_SECONDS)' }]);
    const tooShort = await api.admin('post', `/merchants/${tenant.merchantId}/portal-links`).send({ expiresInSeconds: 5 }).expect(400);
    expect(tooShort.body.errors[0].pointer).toBe('/expiresInSeconds');
    const unknown = await api.admin('post', `/merchants/${tenant.merchantId}/portal-links`).send({ merchantKey: 'x' }).expect(400);
    expect(JSON.stringify(unknown.body.errors)).toContain('merchantKey');
  });
});

describe('the portal link', () => {
  it('shows an entry page without using the link, then exchanges it once for a strict session cookie', async () => {
    const tenant = await api.createTenant();
    const { url, token } = await createLink('merchants', tenant.merchantId);
    const page = await get(`${new URL(url).pathname}${new URL(url).search}`).expect(200);
    expect(page.text).toContain('name="token"');
    // Opening the page twice (a link preview, then the merchant) uses nothing up.
    await get(`/portal/enter?token=${token}`).expect(200);

    const entered = await enter(token).expect(303);
    expect(entered.headers.location).toBe('/portal');
    const cookie = String(entered.headers['set-cookie']![0]);
    expect(cookie).toMatch(/^herald_portal=[A-Za-z0-9_-]{43};/);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).toMatch(/; Path=\/portal/);
    const expires = Date.parse(/Expires=([^;]+)/.exec(cookie)![1]!);
    expect(expires - Date.now()).toBeGreaterThan(3_500_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(3_600_000);
    // The session is stored as the hash of the cookie's token.
    const sessionToken = cookie.split(';', 1)[0]!.split('=')[1]!;
    expect(await api.prisma.portalSession.count({ where: { tokenHash: createHash('sha256').update(sessionToken).digest('hex') } })).toBe(1);

    const again = await enter(token).expect(403);
    expect(again.headers['set-cookie']).toBeUndefined();
    expect(again.text).toContain('used already or has expired');
  });

  it('opens one session however many requests race with the same link', async () => {
    const tenant = await api.createTenant();
    const { token } = await createLink('merchants', tenant.merchantId);
    const answers = await Promise.all(Array.from({ length: 5 }, () => enter(token)));
    expect(answers.map((res) => res.status).sort()).toEqual([303, 403, 403, 403, 403]);
    expect(await api.prisma.portalSession.count({ where: { merchantId: tenant.merchantId } })).toBe(1);
  });

  it('refuses an expired link, an unknown one, and a form posted from another site', async () => {
    const tenant = await api.createTenant();
    const { token } = await createLink('merchants', tenant.merchantId);
    await api.prisma.portalLink.update({
      where: { tokenHash: createHash('sha256').update(token).digest('hex') },
      data: { expiresAt: new Date(Date.now() - 1_000) },
    });
    await enter(token).expect(403);
    await enter('not-a-link').expect(403);
    await enter('').expect(403);
    const fresh = await createLink('merchants', tenant.merchantId);
    await request(api.app).post('/portal/enter').set('Sec-Fetch-Site', 'cross-site').type('form').send({ token: fresh.token }).expect(403);
    // Refused before the exchange: the link still works from its own page.
    await request(api.app).post('/portal/enter').set('Sec-Fetch-Site', 'same-origin').type('form').send({ token: fresh.token }).expect(303);
  });
});

describe('a portal session', () => {
  it("shows its merchant's target health with the auto-disable date, its failed callback with every attempt, and its events", async () => {
    const s = await scene();
    await api.prisma.notificationTarget.update({ where: { id: s.merchantTarget }, data: { failingSince: new Date(Date.now() - 2 * 86_400_000) } });
    const event = ingestEvent(s, { objectType: 'payment' });
    await api.ingest(event).expect(201);
    await worker.runAll((job) =>
      job.eventId === event.id ? { outcome: 'failed', statusCode: 500, responseBody: 'shop <b>down</b>' } : { outcome: 'succeeded' },
    );
    const { cookie } = await openPortal('merchants', s.merchantId);

    const overview = await get('/portal', cookie).expect(200);
    expect(overview.headers['content-type']).toMatch(/^text\/html/);
    expect(overview.headers['content-security-policy']).toBe(
      "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(overview.headers['cache-control']).toBe('no-store');
    expect(overview.text).toContain('https://merchant.example/hooks?token=***');
    expect(overview.text).toContain('Herald switches this target off');
    expect(overview.text).toContain('Auto-disable at');
    expect(overview.text).not.toMatch(/<dt>Auto-disable at<\/dt><dd><span class="muted">/);
    expect(overview.text).toContain('1 failed callback');

    const deliveries = await get('/portal/deliveries?status=failed', cookie).expect(200);
    const ids = [...deliveries.text.matchAll(/href="\/portal\/deliveries\/([0-9a-f-]{36})"/g)].map((m) => m[1]);
    expect(ids).toHaveLength(1);
    const detail = await get(`/portal/deliveries/${ids[0]}`, cookie).expect(200);
    expect(detail.text).toContain(event.id);
    expect(detail.text).toContain('HTTP 500');
    // The merchant's answer is shown as text, never as markup.
    expect(detail.text).toContain('shop &lt;b&gt;down&lt;/b&gt;');

    const events = await get('/portal/events', cookie).expect(200);
    expect(events.text).toContain(event.id);
  });

  it("shows nothing of another tenant: another merchant's delivery is a 404 and its events are not listed", async () => {
    const mine = await scene();
    const theirs = await scene();
    const theirEvent = ingestEvent(theirs, { objectType: 'payment' });
    await api.ingest(theirEvent).expect(201);
    await worker.runAll(() => ({ outcome: 'failed', statusCode: 500 }));
    const theirDelivery = await api.prisma.delivery.findFirst({ where: { eventId: theirEvent.id, targetId: theirs.merchantTarget } });
    const { cookie } = await openPortal('merchants', mine.merchantId);

    const res = await get(`/portal/deliveries/${theirDelivery!.id}`, cookie).expect(404);
    expect(res.text).toContain(`No delivery &quot;${theirDelivery!.id}&quot;`);
    expect((await get('/portal/deliveries', cookie).expect(200)).text).not.toContain(theirEvent.id);
    expect((await get(`/portal/deliveries?eventId=${theirEvent.id}`, cookie).expect(200)).text).toContain('No callbacks');
    expect((await get('/portal/events', cookie).expect(200)).text).not.toContain(theirEvent.id);

    // Their program's portal sees its own target's callbacks, not the merchant target's.
    const program = await openPortal('programs', theirs.programId);
    const programDelivery = await api.prisma.delivery.findFirst({ where: { eventId: theirEvent.id, targetId: theirs.programTarget } });
    await get(`/portal/deliveries/${programDelivery!.id}`, program.cookie).expect(200);
    await get(`/portal/deliveries/${theirDelivery!.id}`, program.cookie).expect(404);
  });

  it('reveals the signing secret on a POST with the CSRF token, and refuses one without the session or with a forged token', async () => {
    const s = await scene();
    const { cookie, csrf } = await openPortal('merchants', s.merchantId);
    const secret = (await api.admin('get', `/merchants/${s.merchantId}/notification-target/signing-secret`).expect(200)).body.secret as string;
    expect((await get('/portal', cookie).expect(200)).text).not.toContain(secret);

    const shown = await post('/portal/signing-secret', cookie, { csrf }).expect(200);
    expect(shown.text).toContain(secret);
    expect(shown.headers['cache-control']).toBe('no-store');

    const forged = await post('/portal/signing-secret', cookie, { csrf: `${csrf.slice(0, -1)}x` }).expect(403);
    expect(forged.text).not.toContain(secret);
    await post('/portal/signing-secret', cookie, {}).expect(403);
    await post('/portal/signing-secret', undefined, { csrf }).expect(403);
    // Another session's token is no good either.
    const other = await openPortal('merchants', s.merchantId);
    await post('/portal/signing-secret', cookie, { csrf: other.csrf }).expect(403);
  });

  it('refuses pages without a session, with a made-up cookie, after signing out and after it expires', async () => {
    const tenant = await api.createTenant();
    await get('/portal').expect(401);
    await get('/portal/deliveries', 'herald_portal=made-up').expect(401);

    const { cookie, csrf } = await openPortal('merchants', tenant.merchantId);
    await post('/portal/logout', cookie, { csrf: 'forged' }).expect(403);
    await get('/portal', cookie).expect(200);
    const out = await post('/portal/logout', cookie, { csrf }).expect(200);
    expect(String(out.headers['set-cookie']![0])).toMatch(/^herald_portal=;/);
    await get('/portal', cookie).expect(401);

    const expiring = await openPortal('merchants', tenant.merchantId);
    const hash = createHash('sha256').update(expiring.cookie.split('=')[1]!).digest('hex');
    await api.prisma.portalSession.update({ where: { tokenHash: hash }, data: { expiresAt: new Date(Date.now() - 1_000) } });
    const expired = await get('/portal/events', expiring.cookie).expect(401);
    expect(expired.text).toContain('Ask support for a new portal link');
    await post('/portal/signing-secret', expiring.cookie, { csrf: expiring.csrf }).expect(403);
  });

  it('escapes what tenants named themselves, and refuses a bad query parameter naming it', async () => {
    const program = (await api.admin('post', '/programs').send({ name: 'Program' }).expect(201)).body as { id: string };
    const merchant = (await api.admin('post', '/merchants').send({ programId: program.id, name: '<script>alert(1)</script>' }).expect(201)).body as {
      id: string;
    };
    const { cookie } = await openPortal('merchants', merchant.id);
    const overview = await get('/portal', cookie).expect(200);
    expect(overview.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(overview.text).not.toContain('<script>');
    expect(overview.text).toContain('No notification target is set up for you yet');

    const bad = await get('/portal/deliveries?status=lost', cookie).expect(400);
    expect(bad.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(bad.body.errors[0].parameter).toBe('status');
    const deep = await get('/portal/events?page=100000', cookie).expect(400);
    expect(deep.body.errors[0].parameter).toBe('page');
  });

  it('serves its stylesheet to anyone, cacheable', async () => {
    const css = await get('/portal/static/portal.css').expect(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(css.text).toContain('font-family');
  });
});

const MINUTE = 60_000;
/** What a datetime-local input sends for a time `ms` before now, in UTC (to the minute, or to the second). */
const localAgo = (ms: number, withSeconds = false) => new Date(Date.now() - ms).toISOString().slice(0, withSeconds ? 19 : 16);

/** A scene whose merchant has one recent payment callback that failed for good. */
async function failedScene() {
  const s = await scene();
  const event = ingestEvent(s, { objectType: 'payment', createdAt: new Date(Date.now() - 2 * MINUTE).toISOString() });
  await api.ingest(event).expect(201);
  await worker.runAll(() => ({ outcome: 'failed', statusCode: 500 }));
  return { ...s, eventId: event.id };
}

/** The recovery id a 303 of the recovery form points at. */
function recoveryIdOf(res: { headers: Record<string, string> }): string {
  const match = /^\/portal\/recoveries\/([0-9a-f-]{36})$/.exec(res.headers.location ?? '');
  expect(match).not.toBeNull();
  return match![1]!;
}

describe('the recovery form', () => {
  it('starts a recovery from the overview with the CSRF token, redirects to its page, and shows it delivered once the worker sent it', async () => {
    const s = await failedScene();
    const { cookie, csrf } = await openPortal('merchants', s.merchantId);
    const overview = await get('/portal', cookie).expect(200);
    expect(overview.text).toContain('<form method="post" action="/portal/recoveries" class="recovery">');
    expect(overview.text).toMatch(/<input type="datetime-local" id="recovery-from" name="from"/);
    expect(overview.text).toContain('From (UTC)');
    expect(overview.text).toContain('At most 7 days back');

    // Minutes only, as a datetime-local input sends by default; `to` left empty (up to now).
    const started = await post('/portal/recoveries', cookie, { csrf, from: localAgo(10 * MINUTE), to: '' }).expect(303);
    const id = recoveryIdOf(started);
    const stored = await api.prisma.recovery.findUniqueOrThrow({ where: { id } });
    expect(stored.targetId).toBe(s.merchantTarget);
    expect(stored.fromTime.getUTCSeconds()).toBe(0);

    const running = await get(started.headers.location!, cookie).expect(200);
    expect(running.headers['content-type']).toMatch(/^text\/html/);
    expect(running.text).toContain('<span class="badge running">running</span>');
    expect(running.text).toContain('<td class="number" id="recovery-queued">1</td>');
    expect(running.text).toContain('<td class="number" id="recovery-pending">1</td>');
    expect(running.text).toContain(`href="/portal/recoveries/${id}">Refresh</a>`);
    expect(running.text).toContain('the whole window');

    await worker.runAll(() => ({ outcome: 'succeeded', statusCode: 200 }));
    const finished = await get(`/portal/recoveries/${id}`, cookie).expect(200);
    expect(finished.text).toContain('<span class="badge finished">finished</span>');
    expect(finished.text).toContain('<td class="number" id="recovery-delivered">1</td>');
    expect(finished.text).toContain('<td class="number" id="recovery-failed">0</td>');
    expect((await get('/portal/deliveries?status=failed', cookie).expect(200)).text).not.toContain(s.eventId);
  });

  it('reads a window given with seconds as UTC, and links a recovery whose callbacks failed again to the failed ones', async () => {
    const s = await failedScene();
    const { cookie, csrf } = await openPortal('merchants', s.merchantId);
    const from = localAgo(10 * MINUTE, true);
    const to = localAgo(-MINUTE, true);
    const started = await post('/portal/recoveries', cookie, { csrf, from, to }).expect(303);
    const id = recoveryIdOf(started);
    const stored = await api.prisma.recovery.findUniqueOrThrow({ where: { id } });
    expect(stored.fromTime.toISOString()).toBe(`${from}.000Z`);
    expect(stored.toTime.toISOString()).toBe(`${to}.000Z`);

    await worker.runAll(() => ({ outcome: 'failed', statusCode: 500 }));
    const page = await get(`/portal/recoveries/${id}`, cookie).expect(200);
    expect(page.text).toContain('<td class="number" id="recovery-failed">1</td>');
    expect(page.text).toContain('href="/portal/deliveries?status=failed">the failed callbacks</a>');
  });

  it('refuses a form without the session, without the CSRF token or with a forged one with 403, starting nothing', async () => {
    const s = await failedScene();
    const { cookie, csrf } = await openPortal('merchants', s.merchantId);
    const from = localAgo(10 * MINUTE);
    const forged = await post('/portal/recoveries', cookie, { csrf: `${csrf.slice(0, -1)}x`, from }).expect(403);
    expect(forged.headers['content-type']).toMatch(/^text\/html/);
    expect(forged.text).toContain('did not come from your portal session');
    await post('/portal/recoveries', cookie, { from }).expect(403);
    await post('/portal/recoveries', undefined, { csrf, from }).expect(403);
    const other = await openPortal('merchants', s.merchantId);
    await post('/portal/recoveries', cookie, { csrf: other.csrf, from }).expect(403);
    expect(await api.prisma.recovery.count({ where: { targetId: s.merchantTarget } })).toBe(0);
  });

  it('refuses bad dates with a 400 page naming the field and how to fix it', async () => {
    const s = await failedScene();
    const { cookie, csrf } = await openPortal('merchants', s.merchantId);
    const refused = async (form: Record<string, string>, ...phrases: string[]) => {
      const res = await post('/portal/recoveries', cookie, { csrf, ...form }).expect(400);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('Recovery not started');
      for (const phrase of phrases) expect(res.text).toContain(phrase);
    };
    await refused({ from: '' }, 'from is required');
    await refused({}, 'from is required');
    await refused({ from: 'yesterday' }, 'from must be a date and time in UTC, as YYYY-MM-DDTHH:MM');
    await refused({ from: '2026-13-01T10:00' }, 'from must be a date and time in UTC');
    await refused({ from: localAgo(10 * MINUTE), to: '10:00' }, 'to must be a date and time in UTC');
    await refused({ from: localAgo(10 * MINUTE), to: localAgo(20 * MINUTE) }, 'to must be after from');
    await refused({ from: localAgo(8 * 24 * 60 * MINUTE) }, 'from must be at most 7 days ago (RECOVERY_MAX_DAYS)');
    await refused({ from: localAgo(-10 * MINUTE) }, 'from must be in the past when to is not given');
    expect(await api.prisma.recovery.count({ where: { targetId: s.merchantTarget } })).toBe(0);
  });

  it('refuses a second recovery while one runs with a 409 page linking to the running one', async () => {
    const s = await failedScene();
    const { cookie, csrf } = await openPortal('merchants', s.merchantId);
    const first = recoveryIdOf(await post('/portal/recoveries', cookie, { csrf, from: localAgo(10 * MINUTE) }).expect(303));
    const busy = await post('/portal/recoveries', cookie, { csrf, from: localAgo(10 * MINUTE) }).expect(409);
    expect(busy.headers['content-type']).toMatch(/^text\/html/);
    expect(busy.text).toContain(`<a href="/portal/recoveries/${first}">recovery ${first}</a> is still running`);
    expect(await api.prisma.recovery.count({ where: { targetId: s.merchantTarget } })).toBe(1);
  });

  it('refuses a switched-off target with a 409 page saying support switches it on, and a tenant without a target with a 404 page', async () => {
    const s = await failedScene();
    await api.admin('patch', `/merchants/${s.merchantId}/notification-target`).send({ enabled: false }).expect(200);
    const { cookie, csrf } = await openPortal('merchants', s.merchantId);
    const off = await post('/portal/recoveries', cookie, { csrf, from: localAgo(10 * MINUTE) }).expect(409);
    expect(off.headers['content-type']).toMatch(/^text\/html/);
    expect(off.text).toContain('ask support to switch the target on');

    const bare = await api.createTenant();
    const none = await openPortal('merchants', bare.merchantId);
    const missing = await post('/portal/recoveries', none.cookie, { csrf: none.csrf, from: localAgo(10 * MINUTE) }).expect(404);
    expect(missing.headers['content-type']).toMatch(/^text\/html/);
    expect(missing.text).toContain('No notification target is set up for you yet');
  });

  it('answers a 503 page with Retry-After while the delivery queue is unreachable, starting nothing', async () => {
    const s = await failedScene();
    const { cookie, csrf } = await openPortal('merchants', s.merchantId);
    const down = createTestApi({ REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
    try {
      const res = await request(down.app)
        .post('/portal/recoveries')
        .set('Cookie', cookie)
        .type('form')
        .send({ csrf, from: localAgo(10 * MINUTE) })
        .expect(503);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.text).toContain('The delivery queue is unavailable just now and nothing was recovered');
    } finally {
      await down.close();
    }
    expect(await api.prisma.recovery.count({ where: { targetId: s.merchantTarget } })).toBe(0);
  });

  it("answers another tenant's recovery id, and one that is no id at all, with the 404 page", async () => {
    const mine = await failedScene();
    const theirs = await scene();
    const own = await openPortal('merchants', mine.merchantId);
    const id = recoveryIdOf(await post('/portal/recoveries', own.cookie, { csrf: own.csrf, from: localAgo(10 * MINUTE) }).expect(303));
    await get(`/portal/recoveries/${id}`, own.cookie).expect(200);

    const other = await openPortal('merchants', theirs.merchantId);
    const res = await get(`/portal/recoveries/${id}`, other.cookie).expect(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain(`No recovery &quot;${id}&quot;`);
    // The merchant's own program sees its program target's recoveries, not the merchant's.
    const program = await openPortal('programs', mine.programId);
    await get(`/portal/recoveries/${id}`, program.cookie).expect(404);
    await get('/portal/recoveries/not-a-uuid', own.cookie).expect(404);
    await get(`/portal/recoveries/${id}`).expect(401);
  });
});
