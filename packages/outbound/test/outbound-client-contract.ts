import { always, closedPort, startHttpRecorder, startSelfSignedServer, type HttpRecorder, type Responder } from '@herald/testing';
import rootPackage from '../../../package.json';
import { createConnectGuard, OutboundRequestError, type ConnectGuard, type OutboundClient, type OutboundRequest } from '../src';

const OPEN = createConnectGuard({ allowPrivate: true, hostAllowlist: [] });
const STRICT = createConnectGuard({ allowPrivate: false, hostAllowlist: [] });
const SECRET = 'sig-that-must-stay-secret';

/** Makes the client under test, with `guard` as its address policy. */
export type CreateOutboundClient = (guard: ConnectGuard) => OutboundClient;

/**
 * The contract every transport under the outbound client keeps, proven against loopback servers:
 * what is sent (exactly the caller's headers, Herald's User-Agent and the body's length), what comes
 * back (any status, a 3xx never followed, the body as sent and at most maxResponseBytes of it), the
 * one time limit, no proxy, the address policy, and every failure as one OutboundRequestError kind
 * whose message names neither the URL's path or query nor a credential.
 */
export function describeOutboundClientContract(transportName: string, createClient: CreateOutboundClient): void {
  let servers: HttpRecorder[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.close()));
    servers = [];
  });

  /** A loopback server answering as told, closed after the test. */
  async function server(responder?: Responder): Promise<HttpRecorder> {
    const started = await startHttpRecorder(responder);
    servers.push(started);
    return started;
  }

  /** A POST to `url` with small limits; `overrides` changes any field. */
  function post(url: string, overrides: Partial<OutboundRequest> = {}): OutboundRequest {
    return { url, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}', timeoutMs: 2_000, maxResponseBytes: 1_024, ...overrides };
  }

  /** The error `promise` rejects with. */
  async function failureOf(promise: Promise<unknown>): Promise<OutboundRequestError> {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OutboundRequestError);
    return error as OutboundRequestError;
  }

  /** An answer that writes `chunk` every few ms until the client goes away. */
  const endlessBody: Responder = always((res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write('x'.repeat(64 * 1024))), 5);
    res.on('close', () => clearInterval(drip));
  });

  describe(`the outbound client over ${transportName}`, () => {
    const client = createClient(OPEN);

    it('sends one request with its headers, its body and User-Agent Herald/<version>, and returns the answer', async () => {
      const target = await server(always({ status: 201, headers: { 'x-answer': 'yes' }, body: 'made' }));
      const response = await client.send(
        post(`${target.origin}/hook?shop=1`, { headers: { 'content-type': 'application/json', 'user-agent': 'curl/8', 'x-extra': '1' } }),
      );

      expect(response).toMatchObject({ status: 201, body: 'made', truncated: false });
      expect(response.headers['x-answer']).toBe('yes');
      expect(target.requests).toHaveLength(1);
      const [request] = target.requests;
      expect(request).toMatchObject({ method: 'POST', url: '/hook?shop=1', body: '{"a":1}' });
      expect(request!.headers['user-agent']).toBe(`Herald/${rootPackage.version}`);
      expect(request!.headers['x-extra']).toBe('1');
      expect(request!.headers['content-length']).toBe('7');
    });

    it("sends no header but the caller's, Host, Connection, Content-Length and User-Agent: no Accept, no Accept-Encoding", async () => {
      const target = await server();
      await client.send(post(`${target.origin}/hook`, { headers: { 'content-type': 'application/json', 'x-extra': '1' } }));
      expect(Object.keys(target.requests[0]!.headers).sort()).toEqual(['connection', 'content-length', 'content-type', 'host', 'user-agent', 'x-extra']);
    });

    it("sends a caller's Accept and Accept-Encoding as given", async () => {
      const target = await server();
      await client.send(post(`${target.origin}/hook`, { headers: { accept: 'application/json', 'accept-encoding': 'identity' } }));
      expect(target.requests[0]!.headers).toMatchObject({ accept: 'application/json', 'accept-encoding': 'identity' });
    });

    it('returns the body as sent, without decoding a Content-Encoding', async () => {
      const target = await server(always({ headers: { 'content-type': 'text/plain', 'content-encoding': 'gzip' }, body: 'not gzip at all' }));
      const response = await client.send(post(`${target.origin}/hook`));
      expect(response).toMatchObject({ status: 200, body: 'not gzip at all', truncated: false });
      expect(response.headers['content-encoding']).toBe('gzip');
    });

    it('returns a redirect as the answer and never calls its location', async () => {
      const elsewhere = await server();
      const target = await server(always({ status: 302, headers: { location: `${elsewhere.origin}/elsewhere` } }));

      await expect(client.send(post(`${target.origin}/hook`))).resolves.toMatchObject({ status: 302 });
      expect(elsewhere.requests).toHaveLength(0);
    });

    it('gives the wait a 429 asks for with Retry-After', async () => {
      const target = await server(always({ status: 429, headers: { 'retry-after': '7' } }));
      await expect(client.send(post(`${target.origin}/hook`))).resolves.toMatchObject({ status: 429, retryAfterMs: 7_000 });
    });

    it('fails with timeout when the server never answers, within the time limit', async () => {
      const target = await server(always(() => undefined));
      const started = Date.now();
      const error = await failureOf(client.send(post(`${target.origin}/hook?sig=${SECRET}`, { timeoutMs: 200 })));

      expect(error).toMatchObject({ kind: 'timeout', code: 'outbound_request_failed', message: 'no answer within 200 ms' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);
      expect(Date.now() - started).toBeLessThan(1_500);
    });

    describe('reads at most maxResponseBytes of an answer', () => {
      it('keeps that much of a body that never ends, and drops the connection', async () => {
        const target = await server(endlessBody);
        const started = Date.now();
        const response = await client.send(post(`${target.origin}/hook`, { maxResponseBytes: 100, timeoutMs: 5_000 }));

        expect(response).toMatchObject({ status: 200, body: 'x'.repeat(100), truncated: true });
        expect(Date.now() - started).toBeLessThan(2_000);
      });

      it('fails with response_too_large when the whole body is asked for', async () => {
        const target = await server(endlessBody);
        const error = await failureOf(client.send(post(`${target.origin}/hook`, { maxResponseBytes: 100, timeoutMs: 5_000, partialBody: 'fail' })));
        expect(error).toMatchObject({ kind: 'response_too_large', status: 200, message: 'the response body is larger than 100 bytes' });
      });

      it('reads a body of exactly that size whole', async () => {
        const target = await server(always({ body: 'y'.repeat(100) }));
        const response = await client.send(post(`${target.origin}/hook`, { maxResponseBytes: 100, partialBody: 'fail' }));
        expect(response).toMatchObject({ body: 'y'.repeat(100), truncated: false });
      });
    });

    describe('an answer whose body stalls past the time limit', () => {
      const stalls: Responder = always((res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('accepted, and then');
      });

      it('keeps what arrived by default', async () => {
        const target = await server(stalls);
        await expect(client.send(post(`${target.origin}/hook`, { timeoutMs: 200 }))).resolves.toMatchObject({
          status: 200,
          body: 'accepted, and then',
          truncated: true,
        });
      });

      it('fails with timeout when the whole body is asked for', async () => {
        const target = await server(stalls);
        const error = await failureOf(client.send(post(`${target.origin}/hook`, { timeoutMs: 200, partialBody: 'fail' })));
        expect(error).toMatchObject({ kind: 'timeout', status: 200, message: 'no complete answer within 200 ms' });
      });
    });

    describe('an answer whose connection breaks off during the body', () => {
      const breaks: Responder = always((res) => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
        res.write('accepted, and then', () => res.socket?.destroy());
      });

      it('keeps what arrived by default', async () => {
        const target = await server(breaks);
        await expect(client.send(post(`${target.origin}/hook`))).resolves.toMatchObject({ status: 200, body: 'accepted, and then', truncated: true });
      });

      it('fails with connection when the whole body is asked for', async () => {
        const target = await server(breaks);
        const error = await failureOf(client.send(post(`${target.origin}/hook`, { partialBody: 'fail' })));
        expect(error).toMatchObject({ kind: 'connection', status: 200 });
        expect(error.message).toMatch(/^the connection broke off during the answer \(/);
      });
    });

    it('fails with connection when nothing listens, naming the system error and neither the URL nor a credential', async () => {
      const request = post(`http://127.0.0.1:${await closedPort()}/hook?sig=${SECRET}`, { headers: { authorization: `Bearer ${SECRET}` } });
      const error = await failureOf(client.send(request));
      expect(error).toMatchObject({ kind: 'connection', causeCode: 'ECONNREFUSED', message: 'the connection failed (ECONNREFUSED)' });
      expect(JSON.stringify({ ...error, message: error.message, stack: error.stack })).not.toContain(SECRET);
    });

    it('fails with tls when the certificate is self-signed, sending nothing', async () => {
      const tls = await startSelfSignedServer();
      try {
        const error = await failureOf(client.send(post(`${tls.origin}/hook`)));
        expect(error).toMatchObject({
          kind: 'tls',
          causeCode: 'DEPTH_ZERO_SELF_SIGNED_CERT',
          message: 'the TLS connection failed (DEPTH_ZERO_SELF_SIGNED_CERT)',
        });
        expect(tls.received).toBe(0);
      } finally {
        await tls.close();
      }
    });

    it('connects directly, whatever HTTP_PROXY says', async () => {
      const proxy = await server();
      const target = await server();
      const saved = { HTTP_PROXY: process.env.HTTP_PROXY, http_proxy: process.env.http_proxy, NO_PROXY: process.env.NO_PROXY };
      Object.assign(process.env, { HTTP_PROXY: proxy.origin, http_proxy: proxy.origin, NO_PROXY: '' });
      try {
        await expect(createClient(OPEN).send(post(`${target.origin}/hook`))).resolves.toMatchObject({ status: 200 });
      } finally {
        for (const [name, value] of Object.entries(saved)) {
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
      }
      expect(target.requests).toHaveLength(1);
      expect(proxy.requests).toHaveLength(0);
    });

    describe('when private addresses are refused', () => {
      const strict = createClient(STRICT);

      it('refuses a URL whose host is a loopback address, without connecting', async () => {
        const target = await server();
        const error = await failureOf(strict.send(post(`${target.origin}/hook?sig=${SECRET}`)));

        expect(error).toMatchObject({ kind: 'address_refused', message: '127.0.0.1 is a loopback address; private targets are not allowed' });
        expect(target.requests).toHaveLength(0);
      });

      it('refuses a host name that resolves to a loopback address, when connecting', async () => {
        const target = await server();
        const error = await failureOf(strict.send(post(`http://localhost:${new URL(target.origin).port}/hook?sig=${SECRET}`)));

        expect(error.kind).toBe('address_refused');
        expect(error.message).toMatch(/^localhost \((127\.0\.0\.1|::1)\) is a loopback address; private targets are not allowed$/);
        expect(error.message).not.toContain(SECRET);
        expect(target.requests).toHaveLength(0);
      });

      it('sends to a host of the allowlist', async () => {
        const target = await server();
        const allowing = createClient(createConnectGuard({ allowPrivate: false, hostAllowlist: ['localhost'] }));
        await expect(allowing.send(post(`http://localhost:${new URL(target.origin).port}/hook`))).resolves.toMatchObject({ status: 200 });
        expect(target.requests).toHaveLength(1);
      });
    });

    it('fails with connection on a URL that is not http or https, without connecting', async () => {
      const target = await server();
      const error = await failureOf(client.send(post(`ftp://${new URL(target.origin).host}/hook?sig=${SECRET}`)));
      expect(error).toMatchObject({ kind: 'connection', causeCode: 'ERR_INVALID_PROTOCOL', message: 'the connection failed (ERR_INVALID_PROTOCOL)' });
      expect(target.requests).toHaveLength(0);
    });

    it('fails with connection on a URL it cannot parse, without repeating it', async () => {
      const error = await failureOf(client.send(post(`not a url ${SECRET}`)));
      expect(error).toMatchObject({ kind: 'connection', causeCode: 'ERR_INVALID_URL' });
      expect(error.message).not.toContain(SECRET);
    });
  });
}
