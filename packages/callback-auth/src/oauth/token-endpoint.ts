import type { OAuthTokenRequest } from '@herald/domain';
import { AuthConfigurationError } from '../errors/auth-configuration-error';

/**
 * The URL of the token request. The spec's request goes to `{authUrl}?grant_type=client_credentials`,
 * the parameter appended after any query the merchant's URL already has, whose encoding is kept as
 * given. RFC 6749's form requests (form, client_secret_post) go to the authUrl as it is: grant_type travels in the body.
 */
export function tokenRequestUrl(targetId: string, authUrl: string | undefined, style: OAuthTokenRequest = 'spec'): string {
  const invalid = (reason: string) => new AuthConfigurationError('authUrl', `Target "${targetId}": ${reason}`);
  if (typeof authUrl !== 'string' || authUrl === '') throw invalid('oauth auth needs an authUrl');
  let url: URL;
  try {
    url = new URL(authUrl);
  } catch {
    // The URL itself is not repeated: a merchant may have pasted a secret into it.
    throw invalid('authUrl is not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('authUrl must use http or https');
  // An HTTP client would turn user info into an Authorization header of its own, beside the one the spec asks for.
  if (url.username !== '' || url.password !== '') {
    throw invalid('authUrl must not carry user info; give the credentials as username and password');
  }
  const grantTypes = url.searchParams.getAll('grant_type');
  if (grantTypes.some((value) => value !== 'client_credentials')) {
    throw invalid('authUrl already has a grant_type other than client_credentials');
  }
  url.hash = '';
  if (style === 'spec' && grantTypes.length === 0) {
    url.search = url.search === '' ? '?grant_type=client_credentials' : `${url.search}&grant_type=client_credentials`;
  }
  return url.toString();
}
