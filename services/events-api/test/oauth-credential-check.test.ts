// The save-time check of an OAuth target's credentials against authorization servers as merchants
// deploy them: oauth2orize with passport, whose tokens come without expires_in and whose Basic
// strategy does not form-decode the header.
import { randomUUID } from 'node:crypto';
import { startOAuth2orizeMerchant, type OAuth2orizeMerchant } from '@herald/testing';
import { createTestApi } from './support/api';

const api = createTestApi();
const RESERVED = { clientId: 'herald shop', clientSecret: 's3cr+t%zz&a=b' };
const PLAIN = { clientId: 'herald-shop', clientSecret: `plain-${randomUUID()}` };
let reserved: OAuth2orizeMerchant;
let plain: OAuth2orizeMerchant;

beforeAll(async () => {
  [reserved, plain] = await Promise.all([startOAuth2orizeMerchant(RESERVED), startOAuth2orizeMerchant(PLAIN)]);
});
afterAll(() => Promise.all([api.close(), reserved.close(), plain.close()]));

const put = async (server: OAuth2orizeMerchant, client: typeof PLAIN, tokenRequest: string, password = client.clientSecret) => {
  const { merchantId } = await api.createTenant();
  const auth = { mode: 'oauth', authUrl: server.tokenUrl, username: client.clientId, password, tokenRequest };
  return api.admin('put', `/merchants/${merchantId}/notification-target`).send({ url: server.hookUrl, auth });
};

describe('PUT of an OAuth target, checked against oauth2orize', () => {
  it('saves a target whose token endpoint issues tokens without expires_in', async () => {
    const res = await put(plain, PLAIN, 'form');
    expect(res.status).toBe(200);
    expect(res.body.auth).toMatchObject({ tokenRequest: 'form' });
  });

  it('suggests client_secret_post when the form request of credentials with reserved characters is refused', async () => {
    const res = await put(reserved, RESERVED, 'form');
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ type: '/problems/credentials_rejected', tokenEndpoint: { failure: 'http_status', status: 401 } });
    expect(res.body.detail).toContain('try tokenRequest "client_secret_post"');
    expect(res.body.errors).toEqual([{ pointer: '/auth', message: expect.stringContaining('client_secret_post') }]);
    expect(JSON.stringify(res.body)).not.toContain(RESERVED.clientSecret);
  });

  it('saves the same credentials with client_secret_post', async () => {
    const res = await put(reserved, RESERVED, 'client_secret_post');
    expect(res.status).toBe(200);
    expect(res.body.auth).toMatchObject({ tokenRequest: 'client_secret_post', password: '********' });
  });

  it('does not suggest it when the credentials hold no such character: they are simply wrong', async () => {
    const res = await put(plain, PLAIN, 'form', 'wrong-secret');
    expect(res.status).toBe(422);
    expect(res.body.detail).not.toContain('client_secret_post');
  });
});
