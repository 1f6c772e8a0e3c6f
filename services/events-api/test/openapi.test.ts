// The OpenAPI documents, checked by the tools merchants and the platform's teams use on them
// (swagger-parser, Redocly's linter, openapi-typescript with the TypeScript compiler), and every
// kind of real answer checked against them.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { startHttpRecorder, type HttpRecorder } from '@herald/testing';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';
import { expectDocumented, type OpenApiDocument } from './support/openapi';

const run = promisify(execFile);
jest.setTimeout(60_000);

const api = createTestApi();
const limited = createTestApi({ RATE_LIMIT_REQUESTS: '1', RATE_LIMIT_WINDOW_SECONDS: '60' });
let dir: string;
let merchant: OpenApiDocument;
let internal: OpenApiDocument;
let tokens: HttpRecorder;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'herald-openapi-'));
  tokens = await startHttpRecorder();
  merchant = (await request(api.app).get('/openapi.json').expect(200)).body;
  internal = (await request(api.app).get('/openapi/internal.json').expect(200)).body;
  await writeFile(path.join(dir, 'merchant.json'), JSON.stringify(merchant));
  await writeFile(path.join(dir, 'internal.json'), JSON.stringify(internal));
});

afterAll(async () => {
  await Promise.all([api.close(), limited.close(), tokens.close()]);
  await rm(dir, { recursive: true, force: true });
});

describe('the OpenAPI documents', () => {
  it("pass swagger-parser and Redocly's recommended lint rules with no error", async () => {
    const script = path.join(__dirname, 'support', 'check-openapi.mjs');
    const { stdout } = await run(process.execPath, [script, path.join(dir, 'merchant.json'), path.join(dir, 'internal.json')], { cwd: __dirname });
    const results = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { file: string; swaggerParser: string | null; redocly: Array<{ severity: string }> });
    expect(results).toHaveLength(2);
    for (const result of results) {
      expect({ file: result.file, swaggerParser: result.swaggerParser }).toEqual({ file: result.file, swaggerParser: null });
      expect({ file: result.file, errors: result.redocly.filter((p) => p.severity === 'error') }).toEqual({ file: result.file, errors: [] });
    }
  });

  it('describe the merchant API with servers, integer paging, the API key as a security scheme and no internal schema', () => {
    expect(merchant.servers).toEqual([expect.objectContaining({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) })]);
    const parameters = merchant.paths['/events']!.get!.parameters!;
    expect(parameters.find((p) => p.name === 'page')?.schema).toMatchObject({ type: 'integer', minimum: 1, default: 1 });
    expect(parameters.find((p) => p.name === 'pageSize')?.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 20 });
    // OpenAPI 3.1 has tools ignore header parameters named Content-Type, Accept or Authorization.
    expect(parameters.filter((p) => p.in === 'header').map((p) => p.name)).toEqual(['Accept-Language', 'Origin', 'User-Agent']);
    expect(merchant.components.securitySchemes).toEqual({ apiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'x-api-key' }) });
    for (const internalName of ['IngestEvent', 'IngestBatch', 'OAuthTokenResponse', 'CreateProgram', 'NotificationTarget']) {
      expect(merchant.components.schemas).not.toHaveProperty(internalName);
    }
    expect(JSON.stringify(merchant)).not.toMatch(/\/internal|\/admin|ingest|bearer/i);
    // OAuth is named only as a target's auth mode and an attempt's error kind, never with a schema of the token exchange.
    expect(Object.keys(merchant.components.schemas).filter((name) => /oauth|token/i.test(name))).toEqual([]);
    for (const path of ['/events', '/deliveries', '/deliveries/{id}', '/notification-target']) {
      for (const status of ['429', '503']) expect(merchant.paths[path]!.get!.responses[status]!.headers).toHaveProperty('Retry-After');
    }
  });

  it("describe each event's sequence and the gap fill by afterSequence, and no sequence a producer may send", () => {
    const event = merchant.components.schemas['Event'] as { required: string[]; properties: Record<string, unknown> };
    expect(event.required).toContain('sequence');
    expect(event.properties['sequence']).toMatchObject({ type: 'integer', minimum: 1 });
    const afterSequence = merchant.paths['/events']!.get!.parameters!.find((p) => p.name === 'afterSequence');
    expect(afterSequence?.schema).toMatchObject({ type: 'integer', minimum: 0 });
    expect(JSON.stringify(afterSequence)).toContain('objectType and objectId');
    const ingestEvent = internal.components.schemas['IngestEvent'] as { properties: Record<string, unknown> };
    expect(ingestEvent.properties).not.toHaveProperty('sequence');
  });

  it('describe the ingest and admin API in a document of its own, each behind its bearer token', () => {
    expect(internal.components.securitySchemes).toEqual({
      ingestToken: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      adminToken: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
    expect(Object.keys(internal.paths)).toEqual(expect.arrayContaining(['/internal/events', '/admin/programs', '/admin/deliveries']));
    // The domain's own annotation keyword, which the linters must accept as an extension.
    expect(JSON.stringify(internal.components.schemas['MerchantNotificationTarget'])).toContain('"x-violation-hint"');
    expect(Object.keys(internal.paths).some((p) => p === '/events')).toBe(false);
  });

  it('give a client generated by openapi-typescript typed paging and problem members', async () => {
    const bin = path.join(__dirname, '..', 'node_modules', '.bin');
    await run(path.join(bin, 'openapi-typescript'), [path.join(dir, 'merchant.json'), '--output', path.join(dir, 'merchant.d.ts')], { cwd: dir });
    await writeFile(
      path.join(dir, 'client.ts'),
      `import type { components, paths } from './merchant';
type ListEvents = paths['/events']['get'];
declare function listEvents(parameters: ListEvents['parameters']): Promise<ListEvents['responses'][200]['content']['application/json']>;
type Problem = components['schemas']['Problem'];

export async function firstPage(): Promise<number> {
  const page = await listEvents({
    query: { pageSize: 5, page: 1, objectType: 'payment' },
    header: { 'Accept-Language': 'en-US', Origin: 'https://shop.example', 'User-Agent': 'shop/1.0' },
  });
  return page.data.length;
}

export function firstParameter(problem: Problem): string | undefined {
  return problem.errors?.[0]?.parameter;
}

// @ts-expect-error pageSize is an integer, not a string
export const wrong: NonNullable<ListEvents['parameters']['query']> = { pageSize: '5' };
`,
    );
    await writeFile(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { noEmit: true, strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', types: [] },
        files: ['client.ts'],
      }),
    );
    // The project's own compiler; openapi-typescript itself runs on TypeScript 5's API (its peer).
    const compiled = await run(path.join(__dirname, '..', '..', '..', 'node_modules', '.bin', 'tsc'), ['-p', dir], { cwd: dir }).then(
      () => 'compiled',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(compiled).toBe('compiled');
  });
});

describe('real answers match the documents', () => {
  let tenant: Awaited<ReturnType<typeof api.createTenant>>;
  beforeAll(async () => {
    tenant = await api.createTenant();
  });

  it('GET /events: a page, a bad query, a missing key, too many requests', async () => {
    await api.ingest(ingestEvent(tenant)).expect(201);
    expectDocumented(merchant, 'merchant', '/events', 'get', await api.listEvents(tenant.merchantKey.key, { pageSize: 5 }).expect(200));
    const badQuery = await api.listEvents(tenant.merchantKey.key, { page_size: '5' }).expect(400);
    expectDocumented(merchant, 'merchant', '/events', 'get', badQuery);
    expect(badQuery.body.errors[0].parameter).toBe('page_size');
    expectDocumented(merchant, 'merchant', '/events', 'get', await api.listEvents(tenant.merchantKey.key, {}, { 'Accept-Language': 'fr' }).expect(400));
    expectDocumented(merchant, 'merchant', '/events', 'get', await api.listEvents(undefined).expect(401));

    const limitedTenant = await limited.createTenant();
    await limited.listEvents(limitedTenant.merchantKey.key).expect(200);
    expectDocumented(merchant, 'merchant', '/events', 'get', await limited.listEvents(limitedTenant.merchantKey.key).expect(429));
  });

  it('POST /internal/events: one event, a batch, a bad body, an unknown tenant, the wrong token', async () => {
    expectDocumented(internal, 'internal', '/internal/events', 'post', await api.ingest(ingestEvent(tenant)).expect(201));
    expectDocumented(internal, 'internal', '/internal/events', 'post', await api.ingest({ events: [ingestEvent(tenant), ingestEvent(tenant)] }).expect(201));
    expectDocumented(internal, 'internal', '/internal/events', 'post', await api.ingest({ ...ingestEvent(tenant), eventType: 'exploded' }).expect(400));
    expectDocumented(internal, 'internal', '/internal/events', 'post', await api.ingest(ingestEvent({ programId: `p-${randomUUID()}` })).expect(422));
    const wrongToken = await request(api.app).post('/internal/events').set('Authorization', `Bearer ${api.config.adminToken}`).send(ingestEvent(tenant));
    expectDocumented(internal, 'internal', '/internal/events', 'post', wrongToken);
  });

  it('the admin API: tenants, keys, a target, deliveries', async () => {
    const program = await api.admin('post', '/programs').send({ name: 'Documented' }).expect(201);
    expectDocumented(internal, 'internal', '/admin/programs', 'post', program);
    const merchantRes = await api.admin('post', '/merchants').send({ programId: program.body.id, name: 'Shop' }).expect(201);
    expectDocumented(internal, 'internal', '/admin/merchants', 'post', merchantRes);
    const key = await api.admin('post', '/api-keys').send({ merchantId: merchantRes.body.id }).expect(201);
    expectDocumented(internal, 'internal', '/admin/api-keys', 'post', key);
    expectDocumented(internal, 'internal', '/admin/api-keys/{id}', 'delete', await api.admin('delete', `/api-keys/${key.body.id}`).expect(200));
    expectDocumented(
      internal,
      'internal',
      '/admin/merchants',
      'post',
      await api.admin('post', '/merchants').send({ programId: 'nope', name: 'Shop' }).expect(422),
    );

    const targetPath = `/programs/${program.body.id}/notification-target`;
    const target = { url: 'https://program.example/hooks', auth: { mode: 'basic', username: 'shop', password: `pw-${randomUUID()}` } };
    expectDocumented(
      internal,
      'internal',
      '/admin/programs/{programId}/notification-target',
      'put',
      await api.admin('put', targetPath).send(target).expect(200),
    );
    expectDocumented(internal, 'internal', '/admin/programs/{programId}/notification-target', 'get', await api.admin('get', targetPath).expect(200));
    const secretPath = '/admin/programs/{programId}/notification-target/signing-secret';
    expectDocumented(internal, 'internal', secretPath, 'get', await api.admin('get', `${targetPath}/signing-secret`).expect(200));
    expectDocumented(internal, 'internal', `${secretPath}/rotate`, 'post', await api.admin('post', `${targetPath}/signing-secret/rotate`).expect(200));
    const badTarget = api
      .admin('put', `/merchants/${merchantRes.body.id}/notification-target`)
      .send({ ...target, notifications: { objectTypes: ['subscription'] } });
    expectDocumented(internal, 'internal', '/admin/merchants/{merchantId}/notification-target', 'put', await badTarget.expect(400));

    const event = ingestEvent({ programId: program.body.id });
    await api.ingest(event).expect(201);
    const deliveries = await api.admin('get', `/deliveries?programId=${program.body.id}&pageSize=5`).expect(200);
    expectDocumented(internal, 'internal', '/admin/deliveries', 'get', deliveries);
    const deliveryId = deliveries.body.data[0].id;
    expectDocumented(internal, 'internal', '/admin/deliveries/{id}', 'get', await api.admin('get', `/deliveries/${deliveryId}`).expect(200));
    expectDocumented(internal, 'internal', '/admin/events/{eventId}/deliveries', 'get', await api.admin('get', `/events/${event.id}/deliveries`).expect(200));
    expectDocumented(internal, 'internal', '/admin/deliveries/{id}/replay', 'post', await api.admin('post', `/deliveries/${deliveryId}/replay`).expect(202));
    expectDocumented(internal, 'internal', '/admin/programs/{programId}/notification-target', 'delete', await api.admin('delete', targetPath).expect(204));
  });

  it('the admin lists, a PATCH, a target with its health, an attempt with its URL, a refused OAuth check', async () => {
    const program = (await api.admin('post', '/programs').send({ name: 'Listed' }).expect(201)).body;
    const shop = (await api.admin('post', '/merchants').send({ programId: program.id, name: 'Shop' }).expect(201)).body;
    await api.admin('post', '/api-keys').send({ merchantId: shop.id }).expect(201);
    const targetPath = `/merchants/${shop.id}/notification-target`;
    const oauth = { mode: 'oauth', authUrl: `${tokens.origin}/token`, username: 'shop', password: `pw-${randomUUID()}`, scope: 'hooks' };
    await api.admin('put', `${targetPath}?verify=false`).send({ url: 'https://shop.example/hooks', auth: oauth }).expect(200);

    expectDocumented(internal, 'internal', '/admin/programs', 'get', await api.admin('get', '/programs?pageSize=2').expect(200));
    expectDocumented(internal, 'internal', '/admin/merchants', 'get', await api.admin('get', `/merchants?programId=${program.id}`).expect(200));
    expectDocumented(internal, 'internal', '/admin/api-keys', 'get', await api.admin('get', `/api-keys?merchantId=${shop.id}`).expect(200));
    expectDocumented(internal, 'internal', '/admin/api-keys', 'get', await api.admin('get', '/api-keys?merchant=1').expect(400));
    const listed = await api.admin('get', `/notification-targets?programId=${program.id}`).expect(200);
    expectDocumented(internal, 'internal', '/admin/notification-targets', 'get', listed);
    const patched = await api.admin('patch', targetPath).send({ enabled: false }).expect(200);
    expectDocumented(internal, 'internal', '/admin/merchants/{merchantId}/notification-target', 'patch', patched);
    expect(patched.body).toMatchObject({ disabledAt: expect.any(String), auth: { tokenRequest: 'spec', scope: 'hooks' } });
    expectDocumented(
      internal,
      'internal',
      '/admin/merchants/{merchantId}/notification-target',
      'patch',
      await api.admin('patch', targetPath).send({}).expect(400),
    );
    const shown = await api.admin('get', targetPath).expect(200);
    expectDocumented(internal, 'internal', '/admin/merchants/{merchantId}/notification-target', 'get', shown);
    expect(shown.body.health).toMatchObject({ breaker: { state: 'closed' }, inFlight: 0, deferred: 0 });

    await api.admin('patch', targetPath).send({ enabled: true }).expect(200);
    const event = ingestEvent({ programId: program.id, merchantId: shop.id });
    await api.ingest(event).expect(201);
    const delivery = await api.prisma.delivery.findFirstOrThrow({ where: { eventId: event.id } });
    await api.prisma.deliveryAttempt.create({
      data: {
        deliveryId: delivery.id,
        deliveryCreatedAt: delivery.createdAt,
        number: 1,
        startedAt: new Date(),
        durationMs: 12,
        statusCode: 500,
        responseBody: 'down',
        url: 'https://shop.example/hooks',
      },
    });
    const detail = await api.admin('get', `/deliveries/${delivery.id}`).expect(200);
    expectDocumented(internal, 'internal', '/admin/deliveries/{id}', 'get', detail);
    expect(detail.body).toMatchObject({ deferrals: { count: 0 }, attempts: [{ url: 'https://shop.example/hooks' }] });
    expectDocumented(internal, 'internal', '/admin/deliveries', 'get', await api.admin('get', `/deliveries?eventId=${event.id}`).expect(200));
    const replayed = await api.admin('post', '/deliveries/replay').send({ eventId: event.id, limit: 1 }).expect(202);
    expectDocumented(internal, 'internal', '/admin/deliveries/replay', 'post', replayed);

    tokens.respondWith(() => ({ status: 401, body: { error: 'invalid_client', error_description: 'unknown client' } }));
    const refused = await api.admin('put', targetPath).send({ url: 'https://shop.example/hooks', auth: oauth }).expect(422);
    expectDocumented(internal, 'internal', '/admin/merchants/{merchantId}/notification-target', 'put', refused);
    expect(refused.body.tokenEndpoint).toMatchObject({ status: 401, error: 'invalid_client' });
  });
});
