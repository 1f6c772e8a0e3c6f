import { PassThrough } from 'node:stream';
import express, { Router, type Request } from 'express';
import request from 'supertest';
import { createLogger } from '@herald/logging';
import { installRequestLog } from '../src/http/request-log';

describe('installRequestLog', () => {
  const recorded: Array<{ method: string; route: string; status: number }> = [];
  const lines: string[] = [];
  const stream = new PassThrough().on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').trim().split('\n')));
  const app = express();
  installRequestLog(app, createLogger({ level: 'http', service: 'test', stream }), {
    httpRequest: ({ method, route, status }) => recorded.push({ method, route, status }),
  });
  const ownRoute: Array<PropertyDescriptor | undefined> = [];
  const things = Router().get('/:id', (req: Request, res) => {
    ownRoute.push(Object.getOwnPropertyDescriptor(req, 'route'));
    res.json({ route: (req.route as { path: string }).path });
  });
  app.use('/things', things);

  beforeEach(() => {
    recorded.length = 0;
    lines.length = 0;
    ownRoute.length = 0;
  });

  it('records each request under its route pattern as written, and logs it with its request id', async () => {
    const answer = await request(app).get('/THINGS/42').set('X-Request-Id', 'req-1').expect(200);
    expect(answer.body).toEqual({ route: '/:id' });
    expect(answer.headers['x-request-id']).toBe('req-1');
    await request(app).get('/nowhere').expect(404);
    expect(recorded).toEqual([
      { method: 'GET', route: '/things/:id', status: 200 },
      { method: 'GET', route: 'unmatched', status: 404 },
    ]);
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)[0]).toMatchObject({
      message: 'request',
      requestId: 'req-1',
      path: '/THINGS/42',
      status: 200,
    });
  });

  // A property defined on each request would give every request a shape of its own, which made V8
  // keep what requests allocate alive through young collections (docs/benchmarks.md).
  it('notes the route without defining a property on the request', async () => {
    await request(app).get('/things/7').expect(200);
    expect(ownRoute).toEqual([undefined]);
  });
});
