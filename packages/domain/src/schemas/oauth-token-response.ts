import { schemaId } from './schema-helpers';

/** OAuthTokenResponse: what the merchant's Authentication URL returns to the service. */
export const oauthTokenResponseSchema = {
  $id: schemaId('oauth-token-response'),
  title: 'OAuthTokenResponse',
  description: "The token response of the merchant's Authentication URL (OAuth 2.0 client credentials grant).",
  type: 'object',
  // RFC 6749 lets token endpoints add parameters (refresh_token, ...): extra fields are ignored, not refused.
  required: ['access_token', 'expires_in', 'token_type'],
  properties: {
    access_token: { type: 'string', minLength: 1, description: 'Token attached to callbacks.' },
    expires_in: { type: 'integer', minimum: 0, description: 'Validity duration of the token, in seconds.' },
    // RFC 6749 compares token types case-insensitively.
    token_type: { type: 'string', pattern: '^[Bb][Ee][Aa][Rr][Ee][Rr]$', description: 'Token scheme name: bearer.' },
    scope: { type: 'string', description: 'Granted scopes, space separated.' },
  },
} as const;
