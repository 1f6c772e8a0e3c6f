// OAuth servers as merchants deploy them, from npm: oauth2orize with passport (which issues
// tokens without expires_in and does not form-decode the Basic header), and
// @node-oauth/oauth2-server with a model that does not decode it either.
import type { TargetAuth } from '@herald/db';
import { startOAuth2orizeMerchant, type OAuth2orizeMerchant } from '@herald/testing';
import { startOAuth2ServerMerchant, type OAuth2ServerMerchant, type OAuthClient } from './support/authorization-servers';
import { useWorlds, type World } from './support/world';

const world = useWorlds();

// Plain credentials, and credentials with characters RFC 6749 §2.3.1 form-encodes in the Basic header.
const PLAIN: OAuthClient = { clientId: 'herald-shop-7', clientSecret: 'plain-secret-7', scope: 'callbacks' };
const RESERVED: OAuthClient = { clientId: 'herald shop 7', clientSecret: 's3cr+t%zz&a=b', scope: 'callbacks' };

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});
async function started<T extends { close(): Promise<void> }>(starting: Promise<T>): Promise<T> {
  const s = await starting;
  open.push(s);
  return s;
}

const oauth = (authUrl: string, client: OAuthClient, tokenRequest: 'form' | 'client_secret_post'): TargetAuth => ({
  mode: 'oauth',
  authUrl,
  username: client.clientId,
  password: client.clientSecret,
  tokenRequest,
});

/** Sends `count` events to the program's target and waits for their deliveries to settle. */
async function deliver(w: World, programId: string, count = 1) {
  const sent = await w.sendEvents(programId, count);
  const rows = await w.settled(sent.map((s) => s.deliveryId));
  return { sent, rows, attempts: await Promise.all(sent.map((s) => w.attempts(s.deliveryId))) };
}

describe('an oauth2orize authorization server, whose tokens come without expires_in', () => {
  it('serves callbacks with one token, cached for the default lifetime', async () => {
    const merchant = await started<OAuth2orizeMerchant>(startOAuth2orizeMerchant(PLAIN));
    const w = world();
    const { programId } = await w.createTarget(merchant.hookUrl, oauth(merchant.tokenUrl, PLAIN, 'form'));
    w.startWorker();

    const { sent, rows } = await deliver(w, programId, 3);
    expect(rows.map((row) => row.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(merchant.accepted.map((body) => JSON.parse(body)).sort(byId)).toEqual(sent.map((s) => s.event).sort(byId));
    expect(merchant.tokenRequests()).toBe(1);
  });

  it('still replaces a token the merchant revoked early: the 401 drops it and the callback is sent again with a new one', async () => {
    const merchant = await started<OAuth2orizeMerchant>(startOAuth2orizeMerchant(PLAIN));
    const w = world();
    const { programId } = await w.createTarget(merchant.hookUrl, oauth(merchant.tokenUrl, PLAIN, 'form'));
    w.startWorker();
    await deliver(w, programId);

    merchant.revokeTokens();
    const { rows, attempts } = await deliver(w, programId);
    expect(rows[0]!.status).toBe('succeeded');
    expect(attempts[0]!.map((a) => a.statusCode)).toEqual([200]);
    expect(merchant.tokenRequests()).toBe(2);
  });

  it('refuses form-encoded credentials in the Basic header, and takes them with client_secret_post', async () => {
    const merchant = await started<OAuth2orizeMerchant>(startOAuth2orizeMerchant(RESERVED));
    const refusing = world({ DELIVERY_ATTEMPTS: '1' });
    const { programId: formProgram } = await refusing.createTarget(merchant.hookUrl, oauth(merchant.tokenUrl, RESERVED, 'form'));
    refusing.startWorker();
    const refused = await deliver(refusing, formProgram);
    expect(refused.rows[0]!.status).toBe('failed');
    expect(refused.attempts[0]![0]).toMatchObject({ errorKind: 'oauth' });
    expect(refused.attempts[0]![0]!.errorMessage).toContain('the token endpoint answered HTTP 401');

    const w = world();
    const { programId } = await w.createTarget(merchant.hookUrl, oauth(merchant.tokenUrl, RESERVED, 'client_secret_post'));
    w.startWorker();
    const { rows } = await deliver(w, programId);
    expect(rows[0]!.status).toBe('succeeded');
    expect(merchant.accepted).toHaveLength(1);
  });
});

describe('@node-oauth/oauth2-server with a model that does not form-decode the Basic header', () => {
  it('refuses the form request with reserved characters, and takes client_secret_post', async () => {
    const merchant = await started<OAuth2ServerMerchant>(startOAuth2ServerMerchant(RESERVED, { decodesBasicForm: false }));
    const refusing = world({ DELIVERY_ATTEMPTS: '1' });
    const { programId: formProgram } = await refusing.createTarget(merchant.hookUrl, oauth(merchant.tokenUrl, RESERVED, 'form'));
    refusing.startWorker();
    const refused = await deliver(refusing, formProgram);
    expect(refused.rows[0]!.status).toBe('failed');
    expect(refused.attempts[0]![0]!.errorMessage).toMatch(/HTTP 401: invalid_client/);

    const w = world();
    const { programId } = await w.createTarget(merchant.hookUrl, oauth(merchant.tokenUrl, RESERVED, 'client_secret_post'));
    w.startWorker();
    const { sent, rows } = await deliver(w, programId);
    expect(rows[0]!.status).toBe('succeeded');
    expect(merchant.accepted.map((body) => JSON.parse(body))).toEqual([sent[0]!.event]);
  });
});

function byId(a: { id: string }, b: { id: string }): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
