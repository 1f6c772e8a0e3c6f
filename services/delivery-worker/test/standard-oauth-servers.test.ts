import type { TargetAuth } from '@herald/db';
import { always } from '@herald/testing';
import { startOAuth2ServerMerchant, startOidcProvider, type AuthorizationServer, type OAuthClient } from './support/authorization-servers';
import { useHttpRecorders, useWorlds, type World } from './support/world';

const world = useWorlds();
const server = useHttpRecorders();

// RFC 6749 §2.3.1 form-encodes '+' and '%' before Base64: sent raw, both servers misread them.
const CLIENT: OAuthClient = { clientId: 'herald-shop-7', clientSecret: 's3cr+t%zz', scope: 'callbacks' };

const open: AuthorizationServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
async function started<T extends AuthorizationServer>(starting: Promise<T>): Promise<T> {
  const s = await starting;
  open.push(s);
  return s;
}

const oauth = (authUrl: string, fields: Partial<Extract<TargetAuth, { mode: 'oauth' }>> = {}): TargetAuth => ({
  mode: 'oauth',
  authUrl,
  username: CLIENT.clientId,
  password: CLIENT.clientSecret,
  tokenRequest: 'form',
  ...fields,
});

/** Sends one event to the program's target and returns its delivery row and attempts once settled. */
async function deliverOne(w: World, programId: string) {
  w.startWorker();
  const [sent] = await w.sendEvents(programId);
  const [row] = await w.settled([sent!.deliveryId]);
  return { sent: sent!, row: row!, attempts: await w.attempts(sent!.deliveryId) };
}

describe('OAuth callbacks with the form token request against standard OAuth 2.0 servers', () => {
  it("are delivered with a token from oidc-provider, which the merchant's introspection accepts", async () => {
    const provider = await started(startOidcProvider(CLIENT));
    const receiver = await server(async (request) => {
      const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
      return { status: token !== undefined && (await provider.isActive(token)) ? 200 : 401 };
    });
    const w = world();
    const { programId } = await w.createTarget(`${receiver.origin}/hook`, oauth(provider.tokenUrl, { scope: 'callbacks' }));

    const { sent, row, attempts } = await deliverOne(w, programId);
    expect(row.status).toBe('succeeded');
    expect(attempts.map((a) => a.statusCode)).toEqual([200]);
    expect(receiver.requests).toHaveLength(1);
    expect(JSON.parse(receiver.requests[0]!.body)).toEqual(sent.event);
  });

  it('are delivered to an Express receiver that authenticates with @node-oauth/oauth2-server', async () => {
    const merchant = await started(startOAuth2ServerMerchant(CLIENT));
    const w = world();
    const { programId } = await w.createTarget(merchant.hookUrl, oauth(merchant.tokenUrl, { scope: 'callbacks' }));

    const { sent, row } = await deliverOne(w, programId);
    expect(row.status).toBe('succeeded');
    expect(merchant.accepted.map((body) => JSON.parse(body))).toEqual([sent.event]);
  });

  it.each([
    [
      'oidc-provider',
      () => startOidcProvider(CLIENT),
      /invalid_request \(only application\/x-www-form-urlencoded content-type bodies are supported on POST \/token\)/,
    ],
    [
      '@node-oauth/oauth2-server',
      () => startOAuth2ServerMerchant(CLIENT),
      /invalid_request \(Invalid request: content must be application\/x-www-form-urlencoded\)/,
    ],
  ])("with the spec request instead, fail with %s's own explanation in the attempt", async (_name, start, explanation) => {
    const authServer = await started<AuthorizationServer>(start());
    const receiver = await server();
    const w = world({ DELIVERY_ATTEMPTS: '1' });
    const { programId } = await w.createTarget(`${receiver.origin}/hook`, oauth(authServer.tokenUrl, { tokenRequest: 'spec' }));

    const { row, attempts } = await deliverOne(w, programId);
    expect(row.status).toBe('failed');
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ errorKind: 'oauth', statusCode: null });
    expect(attempts[0]!.errorMessage).toContain('the token endpoint answered HTTP 400');
    expect(attempts[0]!.errorMessage).toMatch(explanation);
    expect(receiver.requests).toHaveLength(0);
  });

  it("name the token endpoint's invalid_client answer, without the secret", async () => {
    const provider = await started(startOidcProvider(CLIENT));
    const receiver = await server();
    const w = world({ DELIVERY_ATTEMPTS: '1' });
    const wrongSecret = 'wr0ng+secret%41';
    const { programId } = await w.createTarget(`${receiver.origin}/hook`, oauth(provider.tokenUrl, { password: wrongSecret }));

    const { attempts } = await deliverOne(w, programId);
    expect(attempts[0]!.errorMessage).toContain('the token endpoint answered HTTP 401: invalid_client (client authentication failed)');
    for (const text of [attempts[0]!.errorMessage, w.logs()]) {
      expect(text).not.toContain(wrongSecret);
      expect(text).not.toContain(encodeURIComponent(wrongSecret));
    }
  });
});

describe('a token endpoint answering 400 with an RFC 6749 error', () => {
  it('leaves an attempt whose message holds its error and error_description, and no secret', async () => {
    const secret = 'pa55-w0rd-n3ver-shown';
    const tokens = await server(
      always({ status: 400, body: { error: 'invalid_client', error_description: `Client secret ${secret} is not valid for this client` } }),
    );
    const receiver = await server();
    const w = world({ DELIVERY_ATTEMPTS: '1' });
    const { programId } = await w.createTarget(`${receiver.origin}/hook`, {
      mode: 'oauth',
      authUrl: `${tokens.origin}/token`,
      username: 'client',
      password: secret,
    });

    const { attempts } = await deliverOne(w, programId);
    const [attempt] = attempts;
    expect(attempt).toMatchObject({ errorKind: 'oauth' });
    expect(attempt!.errorMessage).toContain('HTTP 400: invalid_client (Client secret [REDACTED] is not valid for this client)');
    const job = await w.queue.getJob(attempts[0]!.deliveryId);
    for (const text of [attempt!.errorMessage, job!.failedReason, w.logs()]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(Buffer.from(`client:${secret}`).toString('base64'));
    }
  });
});
