import { validateOAuthTokenResponse } from '../src';
import { expectAccepted, expectRejectedAt } from './support/expectations';
import { remove, withChanges } from './support/fixtures';

const token = { access_token: 'abc.def', expires_in: 3600, token_type: 'bearer', scope: 'notifications write' };

describe('OAuthTokenResponse (from the merchant Authentication URL)', () => {
  it.each([
    { case: 'a complete token response', input: token },
    { case: 'a response without scope', input: withChanges(token, { '/scope': remove }) },
    { case: 'the token type Bearer in any case', input: withChanges(token, { '/token_type': 'Bearer' }) },
    { case: 'parameters the spec does not list (RFC 6749 extensions)', input: { ...token, refresh_token: 'r' } },
  ])('accepts $case', ({ input }) => {
    expectAccepted(validateOAuthTokenResponse(input), input);
  });

  it.each([
    { case: 'a response without access_token', pointer: '/access_token', value: remove },
    { case: 'an empty access_token', pointer: '/access_token', value: '' },
    { case: 'a response without expires_in', pointer: '/expires_in', value: remove },
    { case: 'an expires_in given as a string', pointer: '/expires_in', value: '3600' },
    { case: 'a negative expires_in', pointer: '/expires_in', value: -1 },
    { case: 'a response without token_type', pointer: '/token_type', value: remove },
    { case: 'a token type other than bearer', pointer: '/token_type', value: 'mac' },
    { case: 'a scope that is not a string', pointer: '/scope', value: ['a', 'b'] },
  ])('rejects $case', ({ pointer, value }) => {
    expectRejectedAt(validateOAuthTokenResponse(withChanges(token, { [pointer]: value })), pointer);
  });
});
