import { createFailedAuthThrottle, type OpsEndpointsOptions, type ReadinessCheck } from '@herald/lifecycle';
import { getFrom } from './from-address';

/** A server that mounts the ops endpoints built from `options`, listening on loopback. */
export type MountOps = (options: OpsEndpointsOptions) => Promise<{ origin: string; close(): Promise<void> }>;

const TOKEN = 'metrics-token-0123456789';
const EXPOSITION = '# HELP herald_contract_total A series.\n# TYPE herald_contract_total counter\nherald_contract_total 1\n';
const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';
const up: ReadinessCheck = { name: 'postgres', check: async () => 1 };
const down: ReadinessCheck = { name: 'redis', check: async () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1')) };
const hung: ReadinessCheck = { name: 'redis', check: () => new Promise(() => undefined) };
// A throttle that never refuses within a test, as the cases that are not about it need.
const lenient = () => createFailedAuthThrottle({ perAddress: 1_000_000, windowSeconds: 60, maxAddresses: 1_000 });

/**
 * The contract every mount of the ops endpoints keeps (the events-api's Express app and the
 * delivery-worker's node:http listener): the same paths, statuses, headers and bodies, with the
 * /metrics bearer token off and on. Each service's test suite runs it against its own mount.
 */
export function describeOpsContract(mountName: string, mount: MountOps): void {
  describe(`the ops endpoints mounted on ${mountName}`, () => {
    const closers: Array<() => Promise<void>> = [];
    afterEach(async () => {
      await Promise.all(closers.splice(0).map((close) => close()));
    });

    async function serve(overrides: Partial<OpsEndpointsOptions> = {}): Promise<string> {
      const server = await mount({
        checks: [up, { ...up, name: 'redis' }],
        readinessTimeoutMs: 200,
        metrics: { contentType: PROMETHEUS_TEXT, exposition: async () => EXPOSITION },
        token: undefined,
        failedAuth: lenient(),
        ...overrides,
      });
      closers.push(() => server.close());
      return server.origin;
    }

    async function answer(url: string, init?: RequestInit): Promise<{ status: number; type: string | null; challenge: string | null; body: string }> {
      const res = await fetch(url, init);
      return { status: res.status, type: res.headers.get('content-type'), challenge: res.headers.get('www-authenticate'), body: await res.text() };
    }

    /** The problem in an answer, after checking its status and media type. */
    function problemIn(res: { status: number; type: string | null; body: string }, status: number): unknown {
      expect(res.status).toBe(status);
      expect(res.type).toBe('application/problem+json');
      return JSON.parse(res.body);
    }

    it('answers GET /healthz with 200 {status: ok}', async () => {
      const res = await answer(`${await serve({ checks: [down] })}/healthz`);
      expect(res).toEqual({ status: 200, type: 'application/json; charset=utf-8', challenge: null, body: '{"status":"ok"}' });
    });

    it('answers HEAD /healthz with 200 and no body', async () => {
      const res = await answer(`${await serve()}/healthz`, { method: 'HEAD' });
      expect(res).toMatchObject({ status: 200, type: 'application/json; charset=utf-8', body: '' });
    });

    it('answers GET /readyz with 200 and every check up when every dependency answers', async () => {
      const res = await answer(`${await serve()}/readyz`);
      expect(res.status).toBe(200);
      expect(res.type).toBe('application/json; charset=utf-8');
      expect(JSON.parse(res.body)).toEqual({ status: 'ready', checks: { postgres: { status: 'up' }, redis: { status: 'up' } } });
    });

    it('answers GET /readyz with 503 problem+json naming a dependency that fails', async () => {
      const res = await answer(`${await serve({ checks: [up, down] })}/readyz`);
      expect(problemIn(res, 503)).toEqual({
        type: '/problems/not_ready',
        title: 'Service Unavailable',
        status: 503,
        detail: 'Not ready: redis did not answer.',
        down: ['redis'],
        checks: { postgres: { status: 'up' }, redis: { status: 'down', error: 'connect ECONNREFUSED 127.0.0.1:1' } },
      });
    });

    it('answers GET /readyz with 503 within the readiness timeout when a dependency hangs', async () => {
      const started = Date.now();
      const res = await answer(`${await serve({ checks: [up, hung], readinessTimeoutMs: 100 })}/readyz`);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(res.status).toBe(503);
      expect(JSON.parse(res.body)).toMatchObject({ down: ['redis'], checks: { redis: { status: 'down', error: 'redis did not answer within 100 ms' } } });
    });

    it('serves GET /metrics without a token when none is set, with the content type of the metrics', async () => {
      const res = await answer(`${await serve()}/metrics`);
      expect(res).toEqual({ status: 200, type: PROMETHEUS_TEXT, challenge: null, body: EXPOSITION });
    });

    it.each([
      ['no Authorization header', undefined],
      ['a wrong token', `Bearer ${TOKEN}x`],
      ['the token under another scheme', `Basic ${TOKEN}`],
    ])('refuses GET /metrics with %s when a token is set: 401 problem+json with a Bearer challenge', async (_case, authorization) => {
      const res = await answer(`${await serve({ token: TOKEN })}/metrics`, { headers: authorization === undefined ? {} : { authorization } });
      expect(res.challenge).toBe('Bearer realm="herald-metrics"');
      expect(problemIn(res, 401)).toEqual({
        type: '/problems/unauthorized',
        title: 'Unauthorized',
        status: 401,
        detail: 'A valid Authorization: Bearer token is required.',
        header: 'authorization',
      });
    });

    it('serves GET /metrics with the bearer token, whatever the case of the scheme name', async () => {
      const origin = await serve({ token: TOKEN });
      for (const scheme of ['Bearer', 'bearer']) {
        const res = await answer(`${origin}/metrics`, { headers: { authorization: `${scheme} ${TOKEN}` } });
        expect(res).toEqual({ status: 200, type: PROMETHEUS_TEXT, challenge: null, body: EXPOSITION });
      }
    });

    it('throttles wrong tokens per client address: after AUTH_FAILURES_PER_ADDRESS of them, 429 with Retry-After to any token from it, while another address is served', async () => {
      const origin = await serve({ token: TOKEN, failedAuth: createFailedAuthThrottle({ perAddress: 5, windowSeconds: 600, maxAddresses: 100 }) });
      const guesser = '127.7.0.1';
      for (let i = 0; i < 5; i++) expect((await getFrom(`${origin}/metrics`, guesser, { authorization: `Bearer guess-${i}-0123456789` })).status).toBe(401);
      for (const authorization of ['Bearer guess-6-0123456789', `Bearer ${TOKEN}`]) {
        const refused = await getFrom(`${origin}/metrics`, guesser, { authorization });
        expect(refused.status).toBe(429);
        expect(refused.headers['content-type']).toBe('application/problem+json');
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(500);
        expect(JSON.parse(refused.body)).toMatchObject({ type: '/problems/too_many_failed_authentications', status: 429 });
        expect(refused.body).not.toContain(TOKEN);
      }
      const served = await getFrom(`${origin}/metrics`, '127.7.0.2', { authorization: `Bearer ${TOKEN}` });
      expect({ status: served.status, body: served.body }).toEqual({ status: 200, body: EXPOSITION });
    });

    it('counts neither a request without Authorization nor /metrics without a token as a failure', async () => {
      const failedAuth = createFailedAuthThrottle({ perAddress: 1, windowSeconds: 600, maxAddresses: 100 });
      const guarded = await serve({ token: TOKEN, failedAuth });
      for (let i = 0; i < 3; i++) expect((await answer(`${guarded}/metrics`)).status).toBe(401);
      expect((await answer(`${guarded}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
      const open = await serve({ failedAuth });
      expect((await answer(`${open}/metrics`, { headers: { authorization: 'Bearer anything-at-all-here' } })).status).toBe(200);
      expect(failedAuth.size()).toBe(0);
    });

    it('answers 500 problem+json when the metrics cannot be read', async () => {
      const res = await answer(
        `${await serve({ metrics: { contentType: PROMETHEUS_TEXT, exposition: async () => Promise.reject(new Error('registry broke')) } })}/metrics`,
      );
      expect(problemIn(res, 500)).toEqual({ type: '/problems/internal', title: 'Internal Server Error', status: 500 });
    });
  });
}
