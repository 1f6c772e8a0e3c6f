// The acceptance test of the merchant portal: a real headless Chromium (Debian's package, driven by
// playwright-core; no browser is downloaded), a real events-api and a real delivery-worker as
// processes, and a merchant receiver on loopback that answers 500. Needs /usr/bin/chromium: see
// the README.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { BrowserContext } from 'playwright-core';
import { useChromium } from './support/chromium';
import { createPrismaClient } from '@herald/db/prisma';
import { callJson, startHttpRecorder, startService, testDatabaseUrl, uniqueId, waitFor, type HttpRecorder, type ServiceProcess } from '@herald/testing';

const ADMIN_TOKEN = randomBytes(24).toString('base64url');
const INGEST_TOKEN = randomBytes(24).toString('base64url');
const TARGET_PASSWORD = `target-${randomUUID()}`;

jest.setTimeout(120_000);

let receiver: HttpRecorder;
let api: ServiceProcess;
let worker: ServiceProcess;
let apiUrl: string;
const prisma = createPrismaClient(testDatabaseUrl());
const browsers = useChromium();

beforeAll(async () => {
  // The merchant's endpoint is down.
  receiver = await startHttpRecorder(() => ({ status: 500, body: 'shop down, try later' }));
  const env = {
    // NODE_ENV=test: the session cookie is Secure, as in production (Chromium takes it over
    // http from a loopback address, a potentially trustworthy origin).
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATABASE_URL: testDatabaseUrl(),
    QUEUE_PREFIX: uniqueId('portal_browser'),
    ADMIN_TOKEN,
    INGEST_TOKEN,
    // One try, so that a 500 fails the delivery at once.
    DELIVERY_ATTEMPTS: '1',
  };
  api = startService('services/events-api/src/server.ts', { ...env, PORT: '0' });
  worker = startService('services/delivery-worker/src/main.ts', { ...env, METRICS_PORT: '0' });
  const [listening] = await Promise.all([api.waitForLog('events-api listening'), worker.waitForLog('delivery-worker ready')]);
  apiUrl = `http://127.0.0.1:${String(listening.port)}`;
});

afterAll(async () => {
  await Promise.all([api?.stop(), worker?.stop()]);
  if (receiver) await receiver.close();
  await prisma.$disconnect();
});

const admin = <T>(method: string, pathname: string, body?: unknown) => callJson<T>(method, `${apiUrl}/admin${pathname}`, { token: ADMIN_TOKEN, body });

/** Headless Chromium on a fresh profile: no cookie of another test. */
function openBrowser(): Promise<BrowserContext> {
  return browsers.open();
}

describe('the merchant portal in a browser', () => {
  it('opens from a support link once, shows a failed callback with its attempts, reveals the signing secret, and refuses forged or sessionless forms', async () => {
    const program = await admin<{ id: string }>('POST', '/programs', { name: 'Portal browser program' });
    const shop = await admin<{ id: string }>('POST', '/merchants', { programId: program.id, name: 'Corner shop' });
    await admin('PUT', `/merchants/${shop.id}/notification-target`, {
      url: `${receiver.origin}/hooks`,
      auth: { mode: 'basic', username: 'shop', password: TARGET_PASSWORD },
    });
    const eventId = `Event-${randomUUID()}`;
    await callJson('POST', `${apiUrl}/internal/events`, {
      token: INGEST_TOKEN,
      body: { id: eventId, programId: program.id, merchantId: shop.id, origin: 'api', eventType: 'created', objectId: 'pay-1', objectType: 'payment' },
    });
    await waitFor(
      () => admin<{ data: Array<{ status: string }> }>('GET', `/events/${eventId}/deliveries`),
      (answer) => answer.data[0]?.status === 'failed',
      30_000,
      'the callback to fail',
      100,
    );
    const link = await admin<{ url: string; expiresAt: string }>('POST', `/merchants/${shop.id}/portal-links`);
    const { secret } = await admin<{ secret: string }>('GET', `/merchants/${shop.id}/notification-target/signing-secret`);

    const browser = await openBrowser();
    try {
      const page = await browser.newPage();
      const requested: string[] = [];
      page.on('request', (req) => requested.push(req.url()));
      await page.goto(link.url);
      await page.getByRole('button', { name: 'Open the portal' }).click();
      await page.waitForURL(`${apiUrl}/portal`);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Overview');
      expect(await page.locator('header .who').textContent()).toBe(`Merchant Corner shop (${shop.id})`);
      const [cookie] = await browser.cookies(`${apiUrl}/portal`);
      expect(cookie).toMatchObject({ name: 'herald_portal', httpOnly: true, secure: true, sameSite: 'Strict', path: '/portal' });
      // The stylesheet applies under the strict CSP.
      // (A string: the test is type-checked without the DOM's types.)
      expect(await page.evaluate(`getComputedStyle(document.querySelector('header')).display`)).toBe('flex');

      // The failed callback and its attempt, with the merchant's answer.
      await page.getByRole('link', { name: '1 failed callback' }).click();
      await page.getByRole('link', { name: eventId }).click();
      await page.getByRole('heading', { name: 'Attempts' }).waitFor();
      const attempts = await page.locator('table.attempts tbody tr').allTextContents();
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toContain('HTTP 500');
      expect(attempts[0]).toContain('shop down, try later');

      // The signing secret, on request.
      await page.getByRole('link', { name: 'Overview', exact: true }).click();
      expect(await page.content()).not.toContain(secret);
      await page.getByRole('button', { name: 'Show the signing secret' }).click();
      expect(await page.locator('#signing-secret').textContent()).toBe(secret);

      // A forged CSRF token in the form: refused, the secret not shown.
      await page.getByRole('link', { name: 'Overview', exact: true }).click();
      await page.locator('form[action="/portal/signing-secret"] input[name="csrf"]').evaluate((input) => {
        (input as unknown as { value: string }).value = 'forged';
      });
      const [forged] = await Promise.all([
        page.waitForResponse((res) => res.url() === `${apiUrl}/portal/signing-secret`),
        page.getByRole('button', { name: 'Show the signing secret' }).click(),
      ]);
      expect(forged.status()).toBe(403);
      expect(await page.content()).not.toContain(secret);

      // A form another site posts to the portal carries no session (SameSite=Strict): refused.
      await page.goto('about:blank');
      const csrf = await prisma.portalSession.findFirstOrThrow({ where: { merchantId: shop.id } }).then((row) => row.csrfToken);
      await page.setContent(`<form method="post" action="${apiUrl}/portal/signing-secret"><input name="csrf" value="${csrf}"><button>go</button></form>`);
      const [crossSite] = await Promise.all([page.waitForResponse(`${apiUrl}/portal/signing-secret`), page.getByRole('button', { name: 'go' }).click()]);
      expect(crossSite.status()).toBe(403);
      expect(await page.content()).not.toContain(secret);

      // The session expires: its pages are refused.
      const hash = createHash('sha256').update(cookie!.value).digest('hex');
      await prisma.portalSession.update({ where: { tokenHash: hash }, data: { expiresAt: new Date(Date.now() - 1_000) } });
      const expired = await page.goto(`${apiUrl}/portal`);
      expect(expired?.status()).toBe(401);

      // Every request of the pages went to the events-api.
      expect(requested.filter((url) => !url.startsWith(`${apiUrl}/`) && url !== 'about:blank')).toEqual([]);
    } finally {
      await browser.close();
    }

    // The link works once: another browser opening it is refused, and has no session.
    const other = await openBrowser();
    try {
      const page = await other.newPage();
      await page.goto(link.url);
      const [again] = await Promise.all([page.waitForResponse(`${apiUrl}/portal/enter`), page.getByRole('button', { name: 'Open the portal' }).click()]);
      expect(again.status()).toBe(403);
      expect(await page.locator('main p').textContent()).toContain('used already or has expired');
      expect(await other.cookies(`${apiUrl}/portal`)).toEqual([]);
      const without = await page.goto(`${apiUrl}/portal/deliveries`);
      expect(without?.status()).toBe(401);
    } finally {
      await other.close();
    }

    // Nothing the processes logged holds the link, the session, the secret or the target's password.
    const logs = [api.output(), worker.output()].join('\n');
    expect(logs).not.toContain(new URL(link.url).searchParams.get('token')!);
    expect(logs).not.toContain(secret);
    expect(logs).not.toContain(TARGET_PASSWORD);
  });

  it('runs a recovery from the form once the endpoint is fixed, and shows the failed callback delivered', async () => {
    // This merchant's own endpoint: down (500) until the merchant fixes it.
    let fixed = false;
    const endpoint = await startHttpRecorder(() => (fixed ? { status: 200, body: 'ok' } : { status: 500, body: 'still broken' }));
    const browser = await openBrowser();
    try {
      const program = await admin<{ id: string }>('POST', '/programs', { name: 'Recovery browser program' });
      const shop = await admin<{ id: string }>('POST', '/merchants', { programId: program.id, name: 'Mended shop' });
      await admin('PUT', `/merchants/${shop.id}/notification-target`, { url: `${endpoint.origin}/hooks`, auth: { mode: 'none' } });
      const eventId = `Event-${randomUUID()}`;
      await callJson('POST', `${apiUrl}/internal/events`, {
        token: INGEST_TOKEN,
        body: { id: eventId, programId: program.id, merchantId: shop.id, origin: 'api', eventType: 'created', objectId: 'pay-2', objectType: 'payment' },
      });
      await waitFor(
        () => admin<{ data: Array<{ status: string }> }>('GET', `/events/${eventId}/deliveries`),
        (answer) => answer.data[0]?.status === 'failed',
        30_000,
        'the callback to fail',
        100,
      );
      const link = await admin<{ url: string }>('POST', `/merchants/${shop.id}/portal-links`);

      const page = await browser.newPage();
      await page.goto(link.url);
      await page.getByRole('button', { name: 'Open the portal' }).click();
      await page.waitForURL(`${apiUrl}/portal`);

      // The failed callback and its attempt.
      await page.getByRole('link', { name: '1 failed callback' }).click();
      await page.getByRole('link', { name: eventId }).click();
      const failedAttempts = await page.locator('table.attempts tbody tr').allTextContents();
      expect(failedAttempts).toHaveLength(1);
      expect(failedAttempts[0]).toContain('HTTP 500');

      // The merchant fixes its endpoint and recovers the last ten minutes (UTC) from the overview.
      fixed = true;
      await page.getByRole('link', { name: 'Overview', exact: true }).click();
      await page.getByLabel('From (UTC)').fill(new Date(Date.now() - 10 * 60_000).toISOString().slice(0, 16));
      await page.getByRole('button', { name: 'Recover' }).click();
      await page.waitForURL(/\/portal\/recoveries\/[0-9a-f-]{36}$/);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Recovery');
      expect(await page.locator('#recovery-queued').textContent()).toBe('1');

      // Refreshed as a person would, until the worker has delivered it.
      const delivered = await waitFor(
        async () => {
          await page.getByRole('link', { name: 'Refresh' }).click();
          await page.waitForLoadState();
          return { delivered: await page.locator('#recovery-delivered').textContent(), status: await page.locator('.badge').textContent() };
        },
        (shown) => shown.delivered === '1' && shown.status === 'finished',
        30_000,
        'the recovery page to show the callback delivered',
        200,
      );
      expect(delivered).toEqual({ delivered: '1', status: 'finished' });
      expect(await page.locator('#recovery-failed').textContent()).toBe('0');

      // The callback itself: succeeded on its second attempt.
      await page.getByRole('link', { name: 'Deliveries', exact: true }).click();
      await page.getByRole('link', { name: eventId }).click();
      const attempts = await page.locator('table.attempts tbody tr').allTextContents();
      expect(attempts).toHaveLength(2);
      expect(attempts.some((row) => row.includes('HTTP 200'))).toBe(true);
      expect(endpoint.requests.filter((req) => req.url === '/hooks')).toHaveLength(2);
    } finally {
      await browser.close();
      await endpoint.close();
    }
  });
});
