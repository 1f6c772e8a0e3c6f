import type { Responder } from '@herald/testing';

/** A token endpoint's answers: `token-1`, `token-2`, … valid for `expiresIn` seconds. */
export function issueTokens(expiresIn = 3600, delayMs = 0): Responder {
  return (_request, index) => ({ status: 200, delayMs, body: { access_token: `token-${index + 1}`, expires_in: expiresIn, token_type: 'Bearer' } });
}
