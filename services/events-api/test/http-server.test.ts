import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';
import express from 'express';
import { loadApiConfig, type HttpServerConfig } from '@herald/config';
import { createHttpServer } from '../src/http/http-server';

// Requests Node's parser refuses before Express sees them still get a problem+json answer.
describe('createHttpServer', () => {
  const server = createHttpServer(express().get('/', (_req, res) => res.send('ok')), loadApiConfig({}).http);
  const listening = listenDuringTests(server);

  /** Writes `request` as raw bytes and reads the whole answer (the server closes the connection). */
  function exchange(request: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(listening.port(), '127.0.0.1', () => socket.end(request));
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (answer += chunk));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
  }

  function parse(answer: string): { status: number; headers: string; body: Record<string, unknown> } {
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(body) as Record<string, unknown> };
  }

  it('answers headers over 16 KiB with a 431 problem+json', async () => {
    const answer = parse(await exchange(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
    expect(answer.status).toBe(431);
    expect(answer.headers).toContain('content-type: application/problem+json');
    expect(answer.body).toMatchObject({ status: 431, type: '/problems/headers_too_large' });
  });

  it('answers a broken request line with a 400 problem+json', async () => {
    const answer = parse(await exchange('NOT HTTP AT ALL\r\n\r\n'));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ status: 400, type: '/problems/malformed_request', title: 'Bad Request' });
  });

  it('serves well-formed requests as usual', async () => {
    const answer = await exchange('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });
});

// Express gives every request and response its app's prototypes; the server makes them with those
// prototypes already, so that Express changes no object's prototype (see createHttpServer).
describe('createHttpServer request objects', () => {
  const app = express();
  app.get('/', (req, res) => res.status(201).json({ path: req.path, query: req.query, ip: req.ip, app: req.app === app }));
  const server = createHttpServer(app, loadApiConfig({}).http);
  // As the server hands them over, before Express sees them.
  const made: Array<{ request: boolean; response: boolean }> = [];
  server.prependListener('request', (req, res) => made.push({ request: Object.getPrototypeOf(req) === app.request, response: Object.getPrototypeOf(res) === app.response }));
  const listening = listenDuringTests(server);

  it("makes each request and response with the app's prototypes, which Express's own methods then serve", async () => {
    for (let i = 0; i < 2; i += 1) {
      const answer = await fetch(`http://127.0.0.1:${listening.port()}/?n=${i}`);
      expect(answer.status).toBe(201);
      expect(await answer.json()).toEqual({ path: '/', query: { n: String(i) }, ip: '127.0.0.1', app: true });
    }
    expect(made).toEqual([
      { request: true, response: true },
      { request: true, response: true },
    ]);
  });
});

// Slow clients are dropped within the configured limits, not after Node's defaults (minutes).
describe('createHttpServer limits', () => {
  const limits: HttpServerConfig = { headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 300, maxConnections: 3 };
  // The timeouts are checked periodically, so a drop may come up to one check interval late.
  const SLACK_MS = 700;
  const app = express()
    .get('/', (_req, res) => res.send('ok'))
    .post('/', express.text({ type: '*/*' }), (req, res) => res.send(`got ${String(req.body).length}`));
  const server = createHttpServer(app, limits);
  const listening = listenDuringTests(server);
  const sockets: Socket[] = [];

  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.destroy();
  });

  /** Opens a raw connection, writes `first`, and resolves with what came back and when the server closed it. */
  function open(first: string, to = listening.port()): { closed: Promise<{ answer: string; afterMs: number }>; socket: Socket } {
    const started = Date.now();
    const socket = connect(to, '127.0.0.1', () => socket.write(first));
    sockets.push(socket);
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    const closed = new Promise<{ answer: string; afterMs: number }>((resolve) => {
      socket.on('close', () => resolve({ answer, afterMs: Date.now() - started }));
      socket.on('error', () => undefined);
    });
    return { closed, socket };
  }

  it('drops a client that never finishes its headers within the headers timeout, with a 408', async () => {
    const { closed } = open('GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const { answer, afterMs } = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(afterMs).toBeGreaterThanOrEqual(limits.headersTimeoutMs - 50);
    expect(afterMs).toBeLessThan(limits.headersTimeoutMs + SLACK_MS);
  });

  it('drops a client whose body trickles in within the request timeout, with a 408', async () => {
    const { closed, socket } = open('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nabc');
    // A byte every 100 ms keeps the socket busy, but the whole request is still late.
    const trickle = setInterval(() => socket.writable && socket.write('x'), 100);
    try {
      const { answer, afterMs } = await closed;
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(afterMs).toBeGreaterThanOrEqual(limits.requestTimeoutMs - 50);
      expect(afterMs).toBeLessThan(limits.requestTimeoutMs + SLACK_MS);
    } finally {
      clearInterval(trickle);
    }
  });

  it('serves a request whose body arrives in time', async () => {
    const { closed } = open('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc');
    expect((await closed).answer).toMatch(/^HTTP\/1\.1 200 [\s\S]*got 3$/);
  });

  it('closes an idle keep-alive connection after the keep-alive timeout', async () => {
    const { closed } = open('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const { answer, afterMs } = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toMatch(/keep-alive: timeout=0\r\n/i);
    // Node keeps the socket up to a second past the advertised timeout, so a client that reuses it
    // just before that moment does not meet a closed socket.
    expect(afterMs).toBeGreaterThanOrEqual(limits.keepAliveTimeoutMs - 50);
    expect(afterMs).toBeLessThan(limits.keepAliveTimeoutMs + 1_000 + SLACK_MS);
  });

  it('closes connections beyond the connection cap at once', async () => {
    // Its own server with long timeouts: the held clients must not be dropped while the test knocks.
    const capped = createHttpServer(app, { ...limits, headersTimeoutMs: 10_000, requestTimeoutMs: 10_000 });
    await new Promise<void>((resolve) => capped.listen(0, '127.0.0.1', resolve));
    const cappedPort = (capped.address() as AddressInfo).port;
    try {
      // Fill the cap with clients that stay connected mid-headers, then knock once more.
      const held = Array.from({ length: limits.maxConnections }, () => open('GET / HTTP/1.1\r\n', cappedPort));
      await Promise.all(held.map(({ socket }) => new Promise((resolve) => socket.once('ready', resolve))));
      await new Promise((resolve) => setTimeout(resolve, 100));
      const { closed } = open('GET / HTTP/1.1\r\nHost: x\r\n\r\n', cappedPort);
      const { answer, afterMs } = await closed;
      expect(answer).toBe('');
      expect(afterMs).toBeLessThan(5_000);
      // Once a held client leaves, a new one is served again.
      held[0]?.socket.destroy();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await open('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', cappedPort).closed).answer).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      for (const socket of sockets.splice(0)) socket.destroy();
      capped.closeAllConnections();
      await new Promise((resolve) => capped.close(resolve));
    }
  });
});

/** Listens on a free port of 127.0.0.1 from before the block's first test until after its last. */
function listenDuringTests(server: Server): { port(): number } {
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });
  return { port: () => (server.address() as AddressInfo).port };
}
