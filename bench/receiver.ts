/**
 * The merchant side of the benchmark, in its own process so that it never shares a CPU core's
 * event loop with the load it measures: POST /hook answers 200 and counts callbacks (with the
 * first arrival time of each webhook-id, for end-to-end latency), POST /token is an OAuth token
 * endpoint answering a 60 s token (POST /token/<n>: an n-second token) and counting requests with
 * their times, GET /stats reports, POST /reset clears.
 * Prints `{"message":"listening","port":N}` on stdout once listening.
 */
import { createServer } from 'node:http';

let callbacks = 0;
let lastCallbackAt = 0;
let tokenTimes: number[] = [];
let arrivals = new Map<string, number>();
const MAX_ARRIVALS = 200_000;

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
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok');
    } else if (req.method === 'POST' && url.startsWith('/token')) {
      tokenTimes.push(Date.now());
      const lifetime = Number(/^\/token\/(\d+)/.exec(url)?.[1] ?? 60);
      const body = JSON.stringify({ access_token: `bench-token-${tokenTimes.length}`, token_type: 'Bearer', expires_in: lifetime });
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    } else if (req.method === 'GET' && url === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ callbacks, tokens: tokenTimes.length, tokenTimes, lastCallbackAt }));
    } else if (req.method === 'GET' && url === '/arrivals') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(Object.fromEntries(arrivals)));
    } else if (req.method === 'POST' && url === '/reset') {
      callbacks = 0;
      lastCallbackAt = 0;
      tokenTimes = [];
      arrivals = new Map();
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
process.on('SIGTERM', () => server.close(() => process.exit(0)));
