/**
 * The merchant side of the benchmark, in its own process so that it never shares a CPU core's
 * event loop with the load it measures: POST /hook answers 200 and counts callbacks (with the
 * first arrival time of each webhook-id, for end-to-end latency), POST /token is an OAuth token
 * endpoint answering a 60 s token (POST /token/<n>: an n-second token) and counting requests with
 * their times, GET /stats reports, POST /reset clears.
 * Misbehaving merchants, for the isolation scenarios and bench/concurrency.ts (counted apart from
 * /hook, never in the arrivals): POST /slow/<ms>/… answers 200 after <ms> ms; POST /hang/… holds
 * the request unanswered while the hanging endpoint is down (POST /hang-control/down, the
 * default) and answers 200 once it is up (POST /hang-control/up, which also answers the requests
 * still held). Held requests and pending slow answers end with the process.
 * A flaky merchant, for the soak (bench/soak.ts), also apart from /hook: POST /flaky/<n>/… answers
 * 500 to the first try of every n-th new webhook-id and 200 to its retry (and to every other
 * callback); POST /flaky-take returns the successful arrivals since the last take (webhook-id,
 * time, whether it was a retry) with the counts so far, and forgets those arrivals.
 * An object stuck, for ordered delivery (bench/scenarios/ordering.ts), apart from /hook but with
 * its arrivals: POST /stuck/… answers 500 to the callbacks of objects whose id starts with `stuck`
 * while stuck (POST /stuck-control/on, off: the default), and 200 to every other callback, whose
 * first arrival it records as /hook does; GET /stats counts them under `stuck`.
 * A rate-limited merchant, for bench/scenarios/receivers.ts, apart from /hook: POST /limited/<n>/…
 * answers 200 while it has taken fewer than <n> callbacks in the last second, and 429 with
 * `Retry-After: 1` beyond; GET /stats counts them under `limited` (with the first and last 200's time).
 * Prints `{"message":"listening","port":N}` on stdout once listening.
 */
import { createServer, type ServerResponse } from 'node:http';

let callbacks = 0;
let lastCallbackAt = 0;
let tokenTimes: number[] = [];
let arrivals = new Map<string, number>();
const MAX_ARRIVALS = 200_000;
let slow = { received: 0, answered: 0 };
let hang = { received: 0, held: 0, answered: 0 };
let hanging = true;
const held = new Set<ServerResponse>();
let flaky = { firstTries: 0, failed: 0, delivered: 0, retried: 0 };
/** Webhook-ids answered 500 whose retry has not come yet. */
let flakyFailed = new Set<string>();
let flakyArrivals: Array<[id: string, at: number, retried: boolean]> = [];
const slowTimers = new Set<NodeJS.Timeout>();
let stuckOn = false;
let limited = { delivered: 0, refused: 0, firstAt: 0, lastAt: 0 };
/** When /limited answered its last 200s (ms), oldest first: its sliding one-second window. */
let limitedWindow: number[] = [];
let stuck = { refused: 0, delivered: 0 };

const ok = (res: ServerResponse): void => void res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok');

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const url = req.url ?? '/';
    if (req.method === 'POST' && url.startsWith('/hook')) {
      callbacks += 1;
      lastCallbackAt = Date.now();
      const id = req.headers['webhook-id'];
      if (typeof id === 'string' && !arrivals.has(id) && arrivals.size < MAX_ARRIVALS) arrivals.set(id, Date.now());
      ok(res);
    } else if (req.method === 'POST' && url.startsWith('/slow/')) {
      slow.received += 1;
      const timer = setTimeout(
        () => {
          slowTimers.delete(timer);
          slow.answered += 1;
          ok(res);
        },
        Number(/^\/slow\/(\d+)/.exec(url)?.[1] ?? 1000),
      );
      slowTimers.add(timer);
    } else if (req.method === 'POST' && url.startsWith('/hang/')) {
      hang.received += 1;
      if (hanging) {
        hang.held += 1;
        held.add(res);
        res.on('close', () => held.delete(res));
      } else {
        hang.answered += 1;
        ok(res);
      }
    } else if (req.method === 'POST' && url.startsWith('/flaky/')) {
      const id = String(req.headers['webhook-id'] ?? '');
      const every = Math.max(1, Number(/^\/flaky\/(\d+)/.exec(url)?.[1] ?? 20));
      const retried = flakyFailed.delete(id);
      if (!retried && flaky.firstTries++ % every === 0) {
        flaky.failed += 1;
        flakyFailed.add(id);
        res.writeHead(500, { 'content-type': 'text/plain' }).end('try again');
      } else {
        flaky.delivered += 1;
        if (retried) flaky.retried += 1;
        flakyArrivals.push([id, Date.now(), retried]);
        ok(res);
      }
    } else if (req.method === 'POST' && url.startsWith('/stuck/')) {
      const { objectId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { objectId?: string };
      if (stuckOn && objectId?.startsWith('stuck')) {
        stuck.refused += 1;
        res.writeHead(500, { 'content-type': 'text/plain' }).end('stuck');
      } else {
        stuck.delivered += 1;
        const id = req.headers['webhook-id'];
        if (typeof id === 'string' && !arrivals.has(id) && arrivals.size < MAX_ARRIVALS) arrivals.set(id, Date.now());
        ok(res);
      }
    } else if (req.method === 'POST' && url.startsWith('/limited/')) {
      const perSecond = Math.max(1, Number(/^\/limited\/(\d+)/.exec(url)?.[1] ?? 50));
      const now = Date.now();
      while (limitedWindow.length > 0 && limitedWindow[0]! <= now - 1_000) limitedWindow.shift();
      if (limitedWindow.length >= perSecond) {
        limited.refused += 1;
        res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '1' }).end('too many');
      } else {
        limitedWindow.push(now);
        limited.delivered += 1;
        limited.firstAt ||= now;
        limited.lastAt = now;
        ok(res);
      }
    } else if (req.method === 'POST' && (url === '/stuck-control/on' || url === '/stuck-control/off')) {
      stuckOn = url.endsWith('/on');
      res.writeHead(204).end();
    } else if (req.method === 'POST' && url === '/flaky-take') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...flaky, waitingRetry: flakyFailed.size, arrivals: flakyArrivals }));
      flakyArrivals = [];
    } else if (req.method === 'POST' && (url === '/hang-control/up' || url === '/hang-control/down')) {
      hanging = url.endsWith('/down');
      if (!hanging) {
        hang.answered += held.size;
        held.forEach(ok);
      }
      held.clear();
      res.writeHead(204).end();
    } else if (req.method === 'POST' && url.startsWith('/token')) {
      tokenTimes.push(Date.now());
      const lifetime = Number(/^\/token\/(\d+)/.exec(url)?.[1] ?? 60);
      const body = JSON.stringify({ access_token: `bench-token-${tokenTimes.length}`, token_type: 'Bearer', expires_in: lifetime });
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    } else if (req.method === 'GET' && url === '/stats') {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ callbacks, tokens: tokenTimes.length, tokenTimes, lastCallbackAt, slow, hang, stuck, limited }));
    } else if (req.method === 'GET' && url === '/arrivals') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(Object.fromEntries(arrivals)));
    } else if (req.method === 'POST' && url === '/reset') {
      callbacks = 0;
      lastCallbackAt = 0;
      tokenTimes = [];
      arrivals = new Map();
      slow = { received: 0, answered: 0 };
      hang = { received: 0, held: 0, answered: 0 };
      flaky = { firstTries: 0, failed: 0, delivered: 0, retried: 0 };
      flakyFailed = new Set();
      flakyArrivals = [];
      stuck = { refused: 0, delivered: 0 };
      limited = { delivered: 0, refused: 0, firstAt: 0, lastAt: 0 };
      limitedWindow = [];
      res.writeHead(204).end();
    } else {
      res.writeHead(404).end();
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ message: 'listening', port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => {
  // Held and slow requests would keep the server open: they end with it.
  slowTimers.forEach(clearTimeout);
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
