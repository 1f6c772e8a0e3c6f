import type { OpsEndpointsOptions, ReadinessCheck } from '@herald/lifecycle';

/** A server that mounts the ops endpoints built from `options`, listening on loopback. */
export type MountOps = (options: OpsEndpointsOptions) => Promise<{ origin: string; close(): Promise<void> }>;

const TOKEN = 'metrics-token-0123456789';
const EXPOSITION = '# HELP herald_contract_total A series.\n# TYPE herald_contract_total counter\nherald_contract_total 1\n';
const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';
const up: ReadinessCheck = { name: 'postgres', check: async () => 1 };
const down: ReadinessCheck = { name: 'redis', check: async () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1')) };
const hung: ReadinessCheck = { name: 'redis', check: () => new Promise(() => undefined) };

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

    it('answers 500 problem+json when the metrics cannot be read', async () => {
      const res = await answer(
        `${await serve({ metrics: { contentType: PROMETHEUS_TEXT, exposition: async () => Promise.reject(new Error('registry broke')) } })}/metrics`,
      );
      expect(problemIn(res, 500)).toEqual({ type: '/problems/internal', title: 'Internal Server Error', status: 500 });
    });
  });
}
