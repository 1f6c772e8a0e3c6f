import { loadApiConfig } from '../src';
import { configErrorOf, PRODUCTION_API_SECRETS } from './support/config-errors';

describe('loadApiConfig: the merchant portal', () => {
  it('opens links for 15 minutes and keeps sessions for an hour by default, with a cookie Secure outside development', () => {
    expect(loadApiConfig({}).portal).toEqual({ linkTtlSeconds: 900, sessionTtlSeconds: 3_600, secureCookie: false });
    expect(loadApiConfig({ NODE_ENV: 'test' }).portal.secureCookie).toBe(true);
    expect(loadApiConfig({ ...PRODUCTION_API_SECRETS, NODE_ENV: 'production' }).portal.secureCookie).toBe(true);
    expect(loadApiConfig({ PORTAL_LINK_TTL_SECONDS: '60', PORTAL_SESSION_TTL_SECONDS: '86400' }).portal).toMatchObject({
      linkTtlSeconds: 60,
      sessionTtlSeconds: 86_400,
    });
  });

  it('refuses lifetimes under a minute or beyond their bounds, naming the variable', () => {
    expect(configErrorOf(loadApiConfig, { PORTAL_LINK_TTL_SECONDS: '59' }).message).toMatch(/PORTAL_LINK_TTL_SECONDS/);
    expect(configErrorOf(loadApiConfig, { PORTAL_LINK_TTL_SECONDS: '604801' }).message).toMatch(/PORTAL_LINK_TTL_SECONDS/);
    expect(configErrorOf(loadApiConfig, { PORTAL_SESSION_TTL_SECONDS: '86401' }).message).toMatch(/PORTAL_SESSION_TTL_SECONDS/);
    expect(configErrorOf(loadApiConfig, { PORTAL_SESSION_TTL_SECONDS: 'an hour' }).message).toMatch(/PORTAL_SESSION_TTL_SECONDS/);
  });
});
