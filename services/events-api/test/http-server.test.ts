import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';
import express from 'express';
import { loadApiConfig, type HttpServerConfig } from '@herald/config';
import { waitFor } from '@herald/testing';
import { createHttpServer } from '../src/http/http-server';

// Requests Node's parser refuses before Express sees them still get a problem+json answer.
describe('createHttpServer', () => {
  const server = createHttpServer(
    express().get('/', (_req, res) => res.send('ok')),
    loadApiConfig({}).http,
  );
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
  server.prependListener('request', (req, res) =>
    made.push({ request: Object.getPrototypeOf(req) === app.request, response: Object.getPrototypeOf(res) === app.response }),
  );
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
  const limits: HttpServerConfig = { headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 300, maxConnections: 3, maxConnectionsPerAddress: 3 };
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
});

// Many connections that send part of a request and then neither read nor close, from one address or
// from many (each test's clients come from their own addresses of 127.0.0.0/8): a new client is
// still served, at once.
describe('createHttpServer under a connection flood', () => {
  const base: HttpServerConfig = {
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 10_000,
    keepAliveTimeoutMs: 5_000,
    maxConnections: 20,
    maxConnectionsPerAddress: 5,
  };
  const sockets: Socket[] = [];
  const servers: Server[] = [];
  // /slow answers once the test calls release(): until then its connections are busy.
  let release: () => void = () => undefined;
  let released = Promise.resolve();
  beforeEach(() => {
    released = new Promise<void>((resolve) => (release = resolve));
  });
  const app = express()
    .get('/', (_req, res) => res.send('ok'))
    .get('/slow', async (_req, res) => {
      await released;
      res.send('slow');
    });

  afterEach(async () => {
    release();
    for (const socket of sockets.splice(0)) socket.destroy();
    await Promise.all(
      servers.splice(0).map((server) => {
        server.closeAllConnections();
        return new Promise((resolve) => server.close(resolve));
      }),
    );
  });

  async function start(limits: HttpServerConfig): Promise<{ server: Server; port: number }> {
    const server = createHttpServer(app, limits);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { server, port: (server.address() as AddressInfo).port };
  }

  /** A client from `from` (an address of 127.0.0.0/8) that writes `first` and then neither reads nor closes. */
  async function holdOpen(port: number, from: string, first: string): Promise<Socket> {
    const socket = connect({ port, host: '127.0.0.1', localAddress: from });
    sockets.push(socket);
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.pause();
    socket.write(first);
    return socket;
  }

  /** One request from `from` with `Connection: close`; resolves with the whole answer ('' when the server hung up). */
  function request(port: number, from: string, path = '/'): Promise<string> {
    return new Promise((resolve) => {
      const socket = connect({ port, host: '127.0.0.1', localAddress: from }, () =>
        socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
      );
      sockets.push(socket);
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (answer += chunk));
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(answer));
    });
  }

  const connections = (server: Server): Promise<number> =>
    new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));

  /** Fills `count` connections, `perAddress` from each of the addresses 127.0.<block>.1, .2, …, each mid-request-line. */
  async function flood(server: Server, port: number, block: number, count: number, perAddress: number): Promise<Socket[]> {
    const held: Socket[] = [];
    for (let i = 0; i < count; i += 1) held.push(await holdOpen(port, `127.0.${block}.${1 + Math.floor(i / perAddress)}`, 'GET /slowly-'));
    await waitFor(
      () => connections(server),
      (n) => n === count,
      5_000,
      `${count} held connections`,
    );
    return held;
  }

  it('forgets a client it answered 408, even one that neither reads the answer nor closes', async () => {
    const limits = { ...base, headersTimeoutMs: 300, requestTimeoutMs: 300 };
    const { server, port } = await start(limits);
    await flood(server, port, 1, limits.maxConnections, limits.maxConnectionsPerAddress);
    // Half-closed sockets left behind would keep counting against the cap, and close the API to everyone.
    await waitFor(
      () => connections(server),
      (n) => n === 0,
      5_000,
      'the answered connections to be gone',
    );
    expect(await request(port, '127.0.1.100')).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('closes a connection over the per-address cap at once, and serves every other address', async () => {
    const { server, port } = await start(base);
    const held = await flood(server, port, 2, base.maxConnectionsPerAddress, base.maxConnectionsPerAddress);
    expect(await request(port, '127.0.2.1')).toBe('');
    expect(await request(port, '127.0.2.2')).toMatch(/^HTTP\/1\.1 200 /);
    expect(await connections(server)).toBe(base.maxConnectionsPerAddress);
    // Once one of its connections leaves, the address is served again.
    held[0]!.destroy();
    await waitFor(
      () => connections(server),
      (n) => n === base.maxConnectionsPerAddress - 1,
      5_000,
      'the closed connection to be gone',
    );
    expect(await request(port, '127.0.2.1')).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('makes room for a new client by closing the oldest connection still waiting for its headers', async () => {
    const { server, port } = await start(base);
    const held = await flood(server, port, 3, base.maxConnections, base.maxConnectionsPerAddress);
    const oldestClosed = new Promise((resolve) => held[0]!.once('close', resolve));
    expect(await request(port, '127.0.3.100')).toMatch(/^HTTP\/1\.1 200 /);
    await oldestClosed;
    expect(held.slice(1).every((socket) => !socket.destroyed && !socket.readableEnded)).toBe(true);
  });

  it('never closes a connection whose request is being answered to make room', async () => {
    const { server, port } = await start(base);
    const busy = Array.from({ length: base.maxConnections }, (_, i) => request(port, `127.0.4.${1 + Math.floor(i / base.maxConnectionsPerAddress)}`, '/slow'));
    await waitFor(
      () => connections(server),
      (n) => n === base.maxConnections,
      5_000,
      'the busy connections',
    );
    expect(await request(port, '127.0.4.100')).toBe('');
    release();
    for (const answer of await Promise.all(busy)) expect(answer).toMatch(/^HTTP\/1\.1 200 [\s\S]*slow$/);
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
