// `pnpm demo`: a first callback in one command, against a running Herald (`pnpm start`). Creates
// (or reuses) a demo program and merchant, gives the merchant a new API key, starts a small merchant
// receiver on 127.0.0.1 that prints each callback as it arrives, points the merchant's notification
// target at it, reports a few sample events as the platform would, waits for their callbacks, lists
// the events through GET /events with the merchant's key, and prints what to run next by hand.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadDemoConfig, type DemoConfig } from '@herald/config';
import { signWebhook } from '@herald/domain';

const PROGRAM_ID = 'demo';
const MERCHANT_ID = 'demo-shop';
/** How long the demo waits for its callbacks before it says where to look. */
const CALLBACK_WAIT_MS = 30_000;
const REQUEST_TIMEOUT_MS = 15_000;

/** A callback as the demo receiver got it. */
interface ReceivedCallback {
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * Whether a callback carries a Standard Webhooks signature made with `secret`, as a merchant's
 * receiver checks it (the reference library does the same computation).
 */
function signedWith(secret: string, callback: ReceivedCallback): boolean {
  const { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures } = callback.headers;
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  const expected = signWebhook(secret, { id, timestamp: Number(timestamp), body: callback.body });
  return signatures.split(' ').includes(expected);
}

/** Something the demo cannot go on without: printed as is, exit 1. */
class DemoError extends Error {}

/** An answer of the API: its body parsed as JSON, as text when it is not JSON, undefined when empty. */
interface ApiAnswer {
  status: number;
  body: unknown;
}

async function call(
  config: DemoConfig,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<ApiAnswer> {
  const url = `${config.apiUrl.replace(/\/+$/, '')}${path}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: {
        ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...options.headers,
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    throw new DemoError(`Herald does not answer at ${config.apiUrl} (${cause}). Start it with \`pnpm start\` in another terminal, or set HERALD_API_URL.`);
  }
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: kept as text for the error message.
  }
  return { status: response.status, body };
}

/** Fails with the API's own explanation (problem+json `detail`) when the status is not one expected. */
function expectStatus(what: string, answer: ApiAnswer, expected: number[]): void {
  if (expected.includes(answer.status)) return;
  const detail =
    typeof answer.body === 'object' && answer.body !== null
      ? ((answer.body as { detail?: unknown }).detail ?? JSON.stringify(answer.body))
      : String(answer.body);
  throw new DemoError(`${what} failed: HTTP ${answer.status}: ${detail}`);
}

/** The demo merchant's endpoint: answers 200 to every POST and prints what came. */
function startReceiver(onCallback: (callback: ReceivedCallback) => void): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      onCallback({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

function sampleEvents(paymentId: string, refundId: string): object[] {
  const base = { programId: PROGRAM_ID, merchantId: MERCHANT_ID, sourceSystem: 'subscription-module' };
  return [
    { ...base, origin: 'api', eventType: 'created', objectType: 'payment', objectId: paymentId, metadata: { amount: '25.00', currency: 'EUR' } },
    { ...base, origin: 'automated', eventType: 'status.updated', objectType: 'payment', objectId: paymentId, metadata: { status: 'settled' } },
    { ...base, origin: 'widget', eventType: 'created', objectType: 'refund', objectId: refundId, metadata: { paymentId, amount: '5.00' } },
  ];
}

async function runDemo(config: DemoConfig, print: (line: string) => void): Promise<void> {
  const ready = await call(config, 'GET', '/readyz');
  expectStatus('Herald readiness (GET /readyz)', ready, [200]);

  const callbacks = new Map<string, ReceivedCallback>();
  let onArrival = (): void => undefined;
  let signingSecret: string | undefined;
  const receiver = await startReceiver((callback) => {
    const event = JSON.parse(callback.body) as { eventType: string; objectType: string; objectId: string };
    const signature = signingSecret !== undefined && signedWith(signingSecret, callback) ? 'signature verified' : 'SIGNATURE NOT VERIFIED';
    print(
      `  callback received  webhook-id ${String(callback.headers['webhook-id'])}  ${event.objectType} ${event.objectId} ${event.eventType}  (${signature})`,
    );
    callbacks.set(String(callback.headers['webhook-id']), callback);
    onArrival();
  });
  try {
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callbacks`;
    print(`Demo merchant receiver listening on ${receiverUrl}`);

    const admin = { token: config.adminToken };
    // 409: made by an earlier run of the demo, reused.
    expectStatus(
      'Creating the demo program',
      await call(config, 'POST', '/admin/programs', { ...admin, body: { id: PROGRAM_ID, name: 'Demo program' } }),
      [201, 409],
    );
    expectStatus(
      'Creating the demo merchant',
      await call(config, 'POST', '/admin/merchants', { ...admin, body: { id: MERCHANT_ID, programId: PROGRAM_ID, name: 'Demo shop' } }),
      [201, 409],
    );
    const keyAnswer = await call(config, 'POST', '/admin/api-keys', { ...admin, body: { merchantId: MERCHANT_ID } });
    expectStatus('Creating an API key', keyAnswer, [201]);
    const apiKey = String((keyAnswer.body as { key: unknown }).key);
    const target = await call(config, 'PUT', `/admin/merchants/${MERCHANT_ID}/notification-target`, {
      ...admin,
      body: { url: receiverUrl, auth: { mode: 'none' } },
    });
    expectStatus('Setting the notification target', target, [200]);
    // The merchant verifies every callback with its target's signing secret (Standard Webhooks).
    const secret = await call(config, 'GET', `/admin/merchants/${MERCHANT_ID}/notification-target/signing-secret`, admin);
    expectStatus('Reading the signing secret', secret, [200]);
    signingSecret = String((secret.body as { secret: unknown }).secret);
    print(`Program "${PROGRAM_ID}", merchant "${MERCHANT_ID}" and a new API key ready; the merchant's notification target is the receiver.`);

    const paymentId = `pay_demo_${randomUUID().slice(0, 8)}`;
    const refundId = `ref_demo_${randomUUID().slice(0, 8)}`;
    const arrived = new Promise<void>((resolve) => {
      onArrival = () => {
        if (callbacks.size >= 3) resolve();
      };
    });
    const ingest = await call(config, 'POST', '/internal/events', { token: config.ingestToken, body: { events: sampleEvents(paymentId, refundId) } });
    expectStatus('Reporting the sample events (POST /internal/events)', ingest, [201]);
    const ingested = ingest.body as { events: Array<{ id: string }>; deliveries: Array<{ count: number }> };
    const eventIds = ingested.events.map((event) => event.id);
    print(`Reported 3 events (${ingested.deliveries.map((d) => d.count).join(', ')} callback(s) each); waiting for the callbacks…`);

    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), CALLBACK_WAIT_MS)));
    const outcome = await Promise.race([arrived, timedOut]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      const missing = eventIds.filter((id) => !callbacks.has(id));
      throw new DemoError(
        `No callback for ${missing.join(', ')} within ${CALLBACK_WAIT_MS / 1000} s. Is a delivery-worker running (pnpm start runs one)? ` +
          `\`pnpm exec herald deliveries show --event ${missing[0]}\` shows what happened to it.`,
      );
    }

    const list = await call(config, 'GET', `/events?objectId=${encodeURIComponent(paymentId)}`, {
      headers: {
        'x-api-key': apiKey,
        'content-type': 'application/json',
        'accept-language': 'en-US',
        origin: 'https://demo.example',
        'user-agent': 'herald-demo',
      },
    });
    expectStatus('Listing the events (GET /events)', list, [200]);
    const page = list.body as { count: number; data: Array<{ id: string; createdAt: string; eventType: string }> };
    print(`GET /events?objectId=${paymentId} as the merchant: ${page.count} event(s)`);
    for (const event of page.data) print(`  ${event.createdAt}  ${event.eventType}  ${event.id}`);

    print('');
    print('Go on by hand:');
    print(`  export HERALD_KEY=${apiKey}   # the demo merchant's API key, shown only now`);
    print(`  curl -s '${config.apiUrl}/events?objectId=${paymentId}' -H "x-api-key: $HERALD_KEY" -H 'Content-Type: application/json' \\`);
    print(`    -H 'Accept-Language: en-US' -H 'Origin: https://demo.example' -H 'User-Agent: curl'`);
    print(`  pnpm exec herald deliveries show --event ${eventIds[0]}   # what happened to its callback`);
    print('The dashboard of the delivery jobs is at /admin/queues; README.md has the whole quickstart.');
  } finally {
    await new Promise((resolve) => receiver.close(resolve));
  }
}

async function main(): Promise<number> {
  const print = (line: string): void => void process.stdout.write(`${line}\n`);
  try {
    await runDemo(loadDemoConfig(), print);
    return 0;
  } catch (error) {
    if (error instanceof DemoError || error instanceof ConfigError) {
      process.stderr.write(`demo: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

main().then((code) => process.exit(code));
