// Every route the Express app serves is an operation of one OpenAPI document, and every
// operation of the documents is a route the app serves: a route added without its documentation
// (or documented and never served) fails here, not in a generated client.
import type { Express } from 'express';
import request from 'supertest';
import { createTestApi } from './support/api';
import type { OpenApiDocument } from './support/openapi';

const api = createTestApi();
afterAll(() => api.close());

// Served, and described elsewhere on purpose: the ops endpoints (docs/operations.md), the
// documents themselves with their reference page, and the dashboard and the merchant portal
// (browser pages, docs/portal.md).
const UNDOCUMENTED = [
  /^GET \/(healthz|livez|readyz|metrics)$/,
  /^GET \/openapi(\.json|\/internal\.json)$/,
  /^GET \/docs(\/|$)/,
  /^[A-Z]+ \/admin\/queues(\/|$)/,
  /^[A-Z]+ \/portal(\/|$)/,
];

const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

type Layer = { rawPath?: unknown; route?: { path: string; methods: Record<string, boolean> }; handle: { stack?: Layer[] } };

/** `METHOD /path/{param}` of every route of the app, mounted routers included. */
function servedRoutes(app: Express): string[] {
  const walk = (stack: Layer[], prefix: string): string[] =>
    stack.flatMap((layer) => {
      const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
      if (layer.route) {
        const path = `${prefix}${layer.route.path}`.replace(/:(\w+)/g, '{$1}');
        return Object.keys(layer.route.methods)
          .filter((method) => METHODS.includes(method))
          .map((method) => `${method.toUpperCase()} ${path}`);
      }
      return layer.handle.stack ? walk(layer.handle.stack, `${prefix}${mount}`) : [];
    });
  return [...new Set(walk((app as unknown as { router: { stack: Layer[] } }).router.stack, ''))];
}

function documentedRoutes(document: OpenApiDocument): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((method) => METHODS.includes(method))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );
}

/** Path parameters are named per router (`:ownerId`); compare the shapes only. */
const shape = (route: string) => route.replace(/\{\w+\}/g, '{}');

describe('the OpenAPI documents and the routes of the app', () => {
  it('document every route the app serves, in one document, and no route it does not serve', async () => {
    const merchant: OpenApiDocument = (await request(api.app).get('/openapi.json').expect(200)).body;
    const internal: OpenApiDocument = (await request(api.app).get('/openapi/internal.json').expect(200)).body;
    const served = servedRoutes(api.app).filter((route) => !UNDOCUMENTED.some((pattern) => pattern.test(route)));
    const documented = [...documentedRoutes(merchant), ...documentedRoutes(internal)];

    expect(served.length).toBeGreaterThan(20);
    expect(served.map(shape).filter((route) => !documented.map(shape).includes(route))).toEqual([]);
    expect(documented.map(shape).filter((route) => !served.map(shape).includes(route))).toEqual([]);
    expect(documented.length).toBe(new Set(documented).size);
  });
});
