import request from 'supertest';
import { MAX_BODY_DEPTH, tooDeepAt } from '../src/http/request-guards';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';

const api = createTestApi();
afterAll(() => api.close());

const scan = (text: string, maxDepth: number) => tooDeepAt(Buffer.from(text, 'utf8'), maxDepth);

describe('POST /internal/events with a hostile body', () => {
  // The reviewer's body: 5 MB of nested arrays. Parsed, it took seconds and a gigabyte; the answer
  // must come from the raw bytes, without the body ever reaching JSON.parse.
  const hostile = `${'['.repeat(2_500_000)}${']'.repeat(2_500_000)}`;

  it('refuses 5 MB of nested arrays with 400 problem+json naming where, without parsing it', async () => {
    const parse = jest.spyOn(JSON, 'parse');
    try {
      const res = await request(api.app)
        .post('/internal/events')
        .set('Authorization', `Bearer ${api.config.ingestToken}`)
        .set('Content-Type', 'application/json')
        .send(hostile);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.errors).toEqual([{ pointer: `/${'0/'.repeat(MAX_BODY_DEPTH - 1)}0`, message: expect.stringMatching(/nested too deeply/) }]);
      const bodiesParsed = parse.mock.calls.filter(([text]) => typeof text === 'string' && text.length > 100_000);
      expect(bodiesParsed).toEqual([]);
    } finally {
      parse.mockRestore();
    }
  });

  it('refuses the same nesting inside an event, naming the member, in UTF-16 too', async () => {
    const tenant = await api.createTenant();
    const event = JSON.stringify(ingestEvent(tenant));
    const body = `{"events":[${event.slice(0, -1)},"metadata":{"a/b":${'['.repeat(100_000)}${']'.repeat(100_000)}}}]}`;
    for (const [charset, bytes] of [
      ['utf-8', Buffer.from(body, 'utf8')],
      ['utf-16le', Buffer.from(body, 'utf16le')],
      // No byte order mark: the body parser tells the byte order from the text; so must the check.
      ['utf-16', Buffer.from(body, 'utf16le')],
      ['utf-16', Buffer.from(body, 'utf16le').swap16()],
      ['utf-16be', Buffer.from(body, 'utf16le').swap16()],
    ] as const) {
      const res = await request(api.app)
        .post('/internal/events')
        .set('Authorization', `Bearer ${api.config.ingestToken}`)
        .set('Content-Type', `application/json; charset=${charset}`)
        // As bytes: superagent would write a Buffer as JSON.
        .serialize((raw: unknown) => raw as string)
        .send(bytes);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].pointer).toMatch(/^\/events\/0\/metadata\/a~1b(\/0)+$/);
    }
  });

  it('refuses a charset it cannot read with 415 problem+json naming Content-Type', async () => {
    const res = await request(api.app)
      .post('/internal/events')
      .set('Authorization', `Bearer ${api.config.ingestToken}`)
      .set('Content-Type', 'application/json; charset=utf-32')
      .send('{}');
    expect(res.status).toBe(415);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 415, header: 'content-type' });
  });

  it('still takes an event whose content nests to the limit', async () => {
    const tenant = await api.createTenant();
    let deep: unknown = 'leaf';
    // The event 1, data 2, its item 3 ... 32 levels in all.
    for (let i = 0; i < 30; i += 1) deep = { next: deep };
    await api.ingest({ events: [ingestEvent(tenant, { data: [deep] })] }).expect(201);
  });
});

describe('tooDeepAt', () => {
  it('counts brackets outside strings only, escapes included', () => {
    expect(scan('[[1]]', 2)).toBeUndefined();
    expect(scan('[[[1]]]', 2)).toBe('/0/0');
    expect(scan('{"a":"[[[[\\"[[[["}', 1)).toBeUndefined();
    expect(scan('["\\\\",[[1]]]', 2)).toBe('/1/0');
  });

  it('names the array or object that goes too deep by its JSON Pointer', () => {
    expect(scan('{"x":1,"y":{"z":[0,1,{"w":[]}]}}', 4)).toBe('/y/z/2/w');
    expect(scan('{"a~b/c":{"d":[]}}', 2)).toBe('/a~0b~1c/d');
    expect(scan('{"é€😀":[[]]}', 2)).toBe('/é€😀/0');
  });

  it('finds nothing in a flat or empty text', () => {
    expect(scan('', 1)).toBeUndefined();
    expect(scan('"[[["', 1)).toBeUndefined();
    expect(scan(`[${'1,'.repeat(1000)}1]`, 1)).toBeUndefined();
  });
});
