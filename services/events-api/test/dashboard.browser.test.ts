// The acceptance test of the Bull dashboard: a real headless Chromium (Debian's package, driven by
// playwright-core; no browser is downloaded), a real events-api and a real delivery-worker as
// processes, and a merchant receiver on loopback. Needs /usr/bin/chromium: see the README.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext } from 'playwright-core';
import { useChromium } from './support/chromium';
import { requestJson, startService, waitFor, testDatabaseUrl, uniqueId, type ServiceProcess } from '@herald/testing';

const ADMIN_TOKEN = randomBytes(24).toString('base64url');
const INGEST_TOKEN = randomBytes(24).toString('base64url');
const DASHBOARD = { username: 'ops', password: `dashboard-${randomUUID()}` };
const TARGET_PASSWORD = `target-${randomUUID()}`;

jest.setTimeout(120_000);

/** The merchant's endpoint: records every callback and answers with `status`. */
interface Receiver {
  url: string;
  status: number;
  requests: Array<{ headers: IncomingHttpHeaders; body: string; answered: number }>;
  server: Server;
}

async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = { url: '', status: 500, requests: [], server: createServer() };
  receiver.server.on('request', (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      receiver.requests.push({ headers: req.headers, body, answered: receiver.status });
      res.writeHead(receiver.status, { 'content-type': 'text/plain' }).end(receiver.status === 200 ? 'ok' : 'not now');
    });
  });
  await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}/hooks`;
  return receiver;
}

let receiver: Receiver;
let api: ServiceProcess;
let worker: ServiceProcess;
let apiUrl: string;
const browsers = useChromium();

beforeAll(async () => {
  receiver = await startReceiver();
  const env = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATABASE_URL: testDatabaseUrl(),
    QUEUE_PREFIX: uniqueId('browser'),
    ADMIN_TOKEN,
    INGEST_TOKEN,
    DASHBOARD_USERNAME: DASHBOARD.username,
    DASHBOARD_PASSWORD: DASHBOARD.password,
    // One try, so that a 500 fails the job at once and it waits in the failed set for ops.
    DELIVERY_ATTEMPTS: '1',
  };
  api = startService('services/events-api/src/server.ts', { ...env, PORT: '0' });
  // METRICS_PORT 0: the default port may be taken by a worker running on this machine.
  worker = startService('services/delivery-worker/src/main.ts', { ...env, METRICS_PORT: '0' });
  const [listening] = await Promise.all([api.waitForLog('events-api listening'), worker.waitForLog('delivery-worker ready')]);
  apiUrl = `http://127.0.0.1:${String(listening.port)}`;
});

afterAll(async () => {
  await Promise.all([api?.stop(), worker?.stop()]);
  // beforeAll may have failed before the receiver existed: then there is nothing to close.
  if (receiver) await new Promise((resolve) => receiver.server.close(resolve));
});

/** One call of the running events-api with a bearer token; `T` is the JSON answer's shape. */
async function call<T = unknown>(
  method: 'GET' | 'POST' | 'PUT',
  pathname: string,
  token: string,
  body?: object,
): Promise<{ status: number; body: T; text: string }> {
  const { status, body: text } = await requestJson(method, `${apiUrl}${pathname}`, { token, body });
  return { status, body: (text ? JSON.parse(text) : undefined) as T, text };
}

/** Headless Chromium on a fresh profile, with or without the dashboard credentials. */
function openBrowser(credentials?: { username: string; password: string }): Promise<BrowserContext> {
  return browsers.open(credentials ? { httpCredentials: credentials } : {});
}

describe('the Bull dashboard in a browser', () => {
  it('answers 401 without credentials', async () => {
    const browser = await openBrowser();
    try {
      const page = await browser.newPage();
      // With no credentials to give, Chromium gives up the navigation after the 401 challenge.
      const [response] = await Promise.all([page.waitForResponse(`${apiUrl}/admin/queues`), page.goto(`${apiUrl}/admin/queues`).catch(() => null)]);
      expect(response.status()).toBe(401);
      expect(response.headers()['www-authenticate']).toMatch(/^Basic realm="Herald dashboard"/);
    } finally {
      await browser.close();
    }
  });

  it('retries a failed delivery job, and the merchant, answering 200 now, gets the callback', async () => {
    const program = await call<{ id: string }>('POST', '/admin/programs', ADMIN_TOKEN, { name: 'Browser test program' });
    expect(program.status).toBe(201);
    const programId = program.body.id;
    const target = await call('PUT', `/admin/programs/${programId}/notification-target`, ADMIN_TOKEN, {
      url: receiver.url,
      auth: { mode: 'basic', username: 'shop', password: TARGET_PASSWORD },
    });
    expect(target.status).toBe(200);
    const eventId = `Event-${randomUUID()}`;
    const ingested = await call('POST', '/internal/events', INGEST_TOKEN, {
      id: eventId,
      programId,
      origin: 'api',
      eventType: 'created',
      objectId: 'sub-1',
      objectType: 'subscription',
    });
    expect(ingested.status).toBe(201);

    // The worker's one try meets the 500: the delivery fails and its job waits in the failed set.
    const failed = await waitFor(
      async () => (await call<{ data: Array<{ id: string; status: string }> }>('GET', `/admin/events/${eventId}/deliveries`, ADMIN_TOKEN)).body.data[0],
      (delivery) => delivery?.status === 'failed',
      30_000,
      'the delivery to fail',
      100,
    ).then((delivery) => delivery!);
    const deliveryId = failed.id;
    expect(receiver.requests.map((r) => r.answered)).toEqual([500]);
    receiver.status = 200;

    const browser = await openBrowser(DASHBOARD);
    try {
      const page = await browser.newPage();
      const requested: string[] = [];
      page.on('request', (req) => requested.push(req.url()));
      const response = await page.goto(`${apiUrl}/admin/queues/queue/deliveries?status=failed`);
      expect(response?.status()).toBe(200);

      // The job as the board shows it: named by the target's owner and id, and an ordinary failure
      // (a 500) reads as its reason, with no stack trace into the worker's files.
      const job = (await page.evaluate(async (url) => (await fetch(url)).json(), `${apiUrl}/admin/queues/api/queues/deliveries/${deliveryId}`)) as {
        job: { name: string; failedReason: string; stacktrace: string[] };
      };
      expect(job.job.name).toBe(`${eventId} -> program ${programId} target ${(target.body as { id: string }).id}`);
      expect(job.job.failedReason).toBe('the target answered HTTP 500; only 200 counts as delivered');
      expect(job.job.stacktrace).toEqual(['CallbackAttemptError: the target answered HTTP 500; only 200 counts as delivered']);
      // Find the failed job by its id (the delivery id) and open it.
      await page.getByRole('link', { name: deliveryId }).click();
      await page.waitForURL(`**/queue/deliveries/${deliveryId}**`);
      // Each action the job's page offers is named (aria-label and title); those Herald refuses
      // (duplicate, update data) are not offered.
      const retry = page.getByRole('button', { name: /^Retry: / });
      await retry.waitFor();
      const offered = await page
        .locator('ul[class^="jobActions"] button:visible')
        .evaluateAll((buttons) => buttons.map((button) => [button.getAttribute('aria-label'), button.getAttribute('title')]));
      expect(offered).toEqual([
        ['Retry: run this job again now', 'Retry: run this job again now'],
        [
          'Clean: remove this job (a pending delivery gets a new one from the reconciler)',
          'Clean: remove this job (a pending delivery gets a new one from the reconciler)',
        ],
      ]);
      expect(await page.locator('ul[class^="jobActions"] button:has(svg.lucide-files), ul[class^="jobActions"] button:has(svg.lucide-pencil)').count()).toBe(2);
      expect(await page.locator('ul[class^="jobActions"] button:has(svg.lucide-files):visible').count()).toBe(0);
      // A change the API refuses is shown, not dropped: the request the board's "duplicate" dialog sends.
      // (A string: the test is type-checked without the DOM's types.)
      await page.evaluate(`(() => {
        const request = new XMLHttpRequest();
        request.open('POST', 'api/queues/deliveries/add');
        request.setRequestHeader('content-type', 'application/json');
        request.send(JSON.stringify({ name: 'by hand', data: {} }));
      })()`);
      const refusal = page.getByRole('alert').filter({ hasText: 'Refused' });
      await refusal.waitFor();
      expect(await refusal.textContent()).toBe('Refused (HTTP 403): Jobs are added by Herald only.');
      // The board asks to confirm a retry.
      await retry.click();
      await page.getByRole('button', { name: 'Confirm' }).click();
      await waitFor(
        () => receiver.requests.some((r) => r.answered === 200),
        (answered) => answered,
        30_000,
        'the callback answered 200',
        100,
      );
      // Every request of the page, its fonts included, went to the events-api.
      expect(requested.length).toBeGreaterThan(3);
      expect(requested.filter((url) => !url.startsWith(`${apiUrl}/`) && !url.startsWith('data:'))).toEqual([]);
      const delivered = await waitFor(
        () => call<{ status: string; attempts: Array<{ number: number; statusCode: number }> }>('GET', `/admin/deliveries/${deliveryId}`, ADMIN_TOKEN),
        (res) => res.body.status === 'succeeded',
        30_000,
        'the delivery to succeed',
        100,
      );
      expect(delivered.body.attempts.map((a) => [a.number, a.statusCode])).toEqual([
        [1, 500],
        [2, 200],
      ]);
      const callback = receiver.requests.at(-1)!;
      expect(callback.headers.authorization).toBe(`Basic ${Buffer.from(`shop:${TARGET_PASSWORD}`).toString('base64')}`);
      expect(JSON.parse(callback.body)).toMatchObject({ id: eventId, objectType: 'subscription' });

      // Nothing the dashboard, the admin API or the logs show holds the target's password.
      const dashboardJson = await page.evaluate(
        async (url) => (await fetch(url)).text(),
        `${apiUrl}/admin/queues/api/queues?activeQueue=deliveries&status=latest`,
      );
      const seen = [dashboardJson, await page.content(), delivered.text, api.output(), worker.output()].join('\n');
      expect(seen).toContain(deliveryId);
      expect(seen).not.toContain(TARGET_PASSWORD);
      expect(seen).not.toContain(Buffer.from(`shop:${TARGET_PASSWORD}`).toString('base64'));
    } finally {
      await browser.close();
    }
  });
});
