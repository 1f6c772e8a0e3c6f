import SwaggerParser from '@apidevtools/swagger-parser';
import request from 'supertest';
import { createTestApi } from './support/api';

const api = createTestApi();
afterAll(() => api.close());

describe('GET /openapi.json: the admin notification target operations', () => {
  it('is a valid OpenAPI 3.1 document, as swagger-parser validates it', async () => {
    const res = await request(api.app).get('/openapi.json');
    await expect(SwaggerParser.validate(structuredClone(res.body))).resolves.toBeDefined();
    // The validator does look: a broken operation is refused.
    const broken = structuredClone(res.body);
    broken.paths['/admin/programs/{programId}/notification-target'].put.responses = 'none';
    await expect(SwaggerParser.validate(broken)).rejects.toThrow();
  });

  it('shows tokenRequest (spec or form) and scope on OAuth targets, the verify parameter and the 422 of a failed check', async () => {
    const { body } = await request(api.app).get('/openapi.json');
    const owners = [
      ['programs', 'programId', 'ProgramNotificationTargetBody'],
      ['merchants', 'merchantId', 'MerchantNotificationTargetBody'],
    ] as const;
    for (const [owner, id, schema] of owners) {
      const auth = body.components.schemas[schema].properties.auth;
      expect(auth.properties.tokenRequest.enum).toEqual(['spec', 'form']);
      expect(auth.properties.scope).toMatchObject({ type: 'string' });
      const put = body.paths[`/admin/${owner}/{${id}}/notification-target`].put;
      expect(put.parameters).toEqual([expect.objectContaining({ name: 'verify', in: 'query', schema: expect.objectContaining({ enum: ['true', 'false'] }) })]);
      expect(Object.keys(put.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '404', '422']));
      expect(put.security).toEqual([{ adminToken: [] }]);
    }
    expect(body.components.schemas.NotificationTarget.properties.auth.properties.tokenRequest.enum).toEqual(['spec', 'form']);
  });

  it('documents the test callback: its marker header, its body and the report', async () => {
    const { body } = await request(api.app).get('/openapi.json');
    for (const path of ['/admin/programs/{programId}/notification-target/test', '/admin/merchants/{merchantId}/notification-target/test']) {
      const post = body.paths[path].post;
      expect(post.description).toContain('herald-test: true');
      expect(post.description).toContain('"type":"herald.test"');
      expect(post.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/TestCallbackReport' });
    }
    expect(body.components.schemas.TestCallbackReport.required).toEqual(['webhookId', 'delivered', 'durationMs']);
  });
});
