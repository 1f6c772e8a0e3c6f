import { randomBytes } from 'node:crypto';
import type { TargetAuth } from '@herald/db';
import type { RecordedRequest, Responder } from '@herald/testing';
import { useHttpRecorders, useWorlds, type World } from './support/world';

const world = useWorlds();
const server = useHttpRecorders();

/** A merchant that answers 500 with everything it received: headers as JSON, and the same again as text. */
const echoHeaders: Responder = (request: RecordedRequest) => ({
  status: 500,
  headers: { 'content-type': 'application/json' },
  body: {
    error: 'echo',
    headers: request.headers,
    text: Object.entries(request.headers)
      .map(([name, value]) => `${name}: ${String(value)}`)
      .join('\n'),
  },
});

/** The response_body PostgreSQL holds for the delivery's only attempt, read with SQL. */
async function storedBody(w: World, deliveryId: string): Promise<string> {
  const rows = await w.prisma.$queryRaw<
    Array<{ response_body: string | null }>
  >`SELECT response_body FROM delivery_attempts WHERE delivery_id = ${deliveryId}::uuid`;
  expect(rows).toHaveLength(1);
  return rows[0]!.response_body!;
}

async function deliverOnceTo(w: World, url: string, auth: TargetAuth): Promise<string> {
  const { programId } = await w.createTarget(url, auth);
  w.startWorker();
  const [sent] = await w.sendEvents(programId);
  await w.settled([sent!.deliveryId]);
  return sent!.deliveryId;
}

describe("a merchant's answer, as stored", () => {
  it('holds no Basic credentials of the target when the merchant echoes the request headers in a 500', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '1' });
    const merchant = await server(echoHeaders);
    const password = `pw-${randomBytes(12).toString('hex')}`;
    const deliveryId = await deliverOnceTo(w, `${merchant.origin}/hook`, { mode: 'basic', username: 'shop-user', password });

    const sentHeader = merchant.requests[0]!.headers.authorization!;
    const encoded = sentHeader.replace(/^Basic /, '');
    const body = await storedBody(w, deliveryId);
    expect(body).toContain('"error":"echo"');
    expect(body).toContain('[REDACTED]');
    for (const secret of [sentHeader, encoded, password]) expect(body).not.toContain(secret);
  });

  it("masks the target's own credentials even where no log rule would find them", async () => {
    const w = world({ DELIVERY_ATTEMPTS: '1' });
    const password = `pw-${randomBytes(12).toString('hex')}`;
    const merchant = await server((request) => ({
      status: 500,
      // Written as nothing the log rules know: no "Basic", no "authorization" key, JSON-escaped.
      body: `seen=${request.headers.authorization!.slice('Basic '.length)};decoded=${Buffer.from(request.headers.authorization!.slice(6), 'base64').toString()}`,
    }));
    const deliveryId = await deliverOnceTo(w, `${merchant.origin}/hook`, { mode: 'basic', username: 'shop-user', password });

    const body = await storedBody(w, deliveryId);
    expect(body).toMatch(/^seen=\[REDACTED\];decoded=shop-user:\[REDACTED\]$/);
  });

  it('holds neither the OAuth access token nor the client password when the merchant echoes them', async () => {
    const w = world({ DELIVERY_ATTEMPTS: '1' });
    const token = `at-${randomBytes(16).toString('hex')}`;
    const password = `oauth-${randomBytes(12).toString('hex')}`;
    const tokens = await server(() => ({ status: 200, body: { access_token: token, expires_in: 3600, token_type: 'Bearer' } }));
    const merchant = await server((request) => ({ status: 500, body: { seen: request.headers.authorization, raw: `access ${token}, client ${password}` } }));
    const deliveryId = await deliverOnceTo(w, `${merchant.origin}/hook`, {
      mode: 'oauth',
      authUrl: `${tokens.origin}/oauth/token`,
      username: 'client-1',
      password,
    });

    expect(merchant.requests[0]!.headers.authorization).toBe(`Bearer ${token}`);
    const body = await storedBody(w, deliveryId);
    expect(body).toContain('[REDACTED]');
    for (const secret of [token, password]) expect(body).not.toContain(secret);
  });
});
