// A body that is not valid UTF-8 is refused with a 400 naming the field, as a U+0000 is: decoded,
// each malformed sequence would become U+FFFD and be stored in place of what the producer meant.
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createTestApi } from './support/api';
import { ingestEvent } from './support/events';

const api = createTestApi();
afterAll(() => api.close());

/** The JSON text of `body`, with the bytes of `marker` (an ASCII placeholder in a string) replaced by `bytes`. */
function withBytes(body: unknown, marker: string, bytes: number[]): Buffer {
  const text = Buffer.from(JSON.stringify(body), 'utf8');
  const at = text.indexOf(marker);
  return Buffer.concat([text.subarray(0, at), Buffer.from(bytes), text.subarray(at + marker.length)]);
}

const post = (bytes: Buffer) =>
  request(api.app)
    .post('/internal/events')
    .set('Authorization', `Bearer ${api.config.ingestToken}`)
    .set('Content-Type', 'application/json')
    .serialize((raw: unknown) => raw as string)
    .send(bytes);

describe('POST /internal/events with malformed UTF-8', () => {
  let tenant: Awaited<ReturnType<typeof api.createTenant>>;
  beforeAll(async () => {
    tenant = await api.createTenant();
  });

  it.each([
    ['a lone continuation byte', [0x80]],
    ['a truncated two-byte sequence', [0xc3]],
    ['an overlong encoding of "/"', [0xc0, 0xaf]],
    ['an encoded UTF-16 surrogate', [0xed, 0xa0, 0x80]],
    ['a byte that never occurs in UTF-8', [0xff]],
  ])('refuses %s in a value with 400 problem+json naming the field, and stores nothing', async (_case, bytes) => {
    const event = ingestEvent(tenant, { objectId: `order-MARK-${randomUUID()}` });
    const res = await post(withBytes(event, 'MARK', bytes));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.errors).toEqual([{ pointer: '/objectId', message: expect.stringMatching(/not valid UTF-8/) }]);
    expect(await api.prisma.event.count({ where: { id: event.id as string } })).toBe(0);
  });

  it('names the field inside a batch, and a member name that is malformed by its object', async () => {
    const batch = { events: [ingestEvent(tenant), ingestEvent(tenant, { metadata: { channel: 'web-MARK' } })] };
    const inValue = await post(withBytes(batch, 'MARK', [0xe2, 0x82]));
    expect(inValue.status).toBe(400);
    expect(inValue.body.errors).toEqual([{ pointer: '/events/1/metadata/channel', message: expect.stringMatching(/not valid UTF-8/) }]);

    const named = { events: [ingestEvent(tenant, { metadata: { 'MARK-key': 'web' } })] };
    const inName = await post(withBytes(named, 'MARK', [0xf8]));
    expect(inName.status).toBe(400);
    expect(inName.body.errors).toEqual([{ pointer: '/events/0/metadata', message: expect.stringMatching(/member name .*not valid UTF-8/) }]);
  });

  it('still takes valid UTF-8 beyond ASCII, U+FFFD itself included', async () => {
    const event = ingestEvent(tenant, { objectId: `Zahlung-äöü-€-😀-\ufffd-${randomUUID()}` });
    const res = await post(Buffer.from(JSON.stringify(event), 'utf8'));
    expect(res.status).toBe(201);
    expect(res.body.objectId).toBe(event.objectId);
  });
});
