import type { Request, Response } from 'express';
import { isWellFormedApiKey, type ApiKeyScope, type TargetOwner } from '@herald/db';
import { checkRequiredHeaders } from '../events/headers';
import { clientKey } from '../http/client-address';
import { HttpError } from '../http/http-error';
import type { RateLimit } from '../http/rate-limit';
import type { ApiKeyAuthenticator } from './api-key-cache';

/** What every route of the merchant API (GET /events, /deliveries, /notification-target) checks first. */
export interface MerchantKeyDependencies {
  apiKeys: Pick<ApiKeyAuthenticator, 'authenticate'>;
  rateLimit: RateLimit;
}

/** Who a merchant API request comes from: the key's id (for its limits) and what it may see. */
export interface MerchantCaller {
  keyId: string;
  scope: ApiKeyScope;
}

/**
 * The x-api-key of a merchant API request, authenticated and counted against its rate limit, then
 * the spec's required headers: a 401 or 429 before any 400, in the order GET /events has always
 * answered them, so that every route of the merchant API fails the same way.
 */
export async function authenticateMerchantRequest(deps: MerchantKeyDependencies, req: Request, res: Response): Promise<MerchantCaller> {
  const key = req.get('x-api-key');
  if (!key) throw unauthorized('The x-api-key header is required.');
  // Wrong keys do not count against the client's address (the failed-authentication throttle):
  // a key is 256 random bits, so guessing one is hopeless, and counting them would let one
  // tenant behind a shared address lock out the others. What a made-up key could cost, a
  // database lookup, the lookup limits bound per address and per prefix (unknown-key-limit.ts).
  // Not of the form Herald gives keys: no lookup, no cache entry.
  if (!isWellFormedApiKey(key)) throw unauthorized('The x-api-key is not a Herald API key: hk_ followed by 43 letters, digits, - or _.');
  const auth = await deps.apiKeys.authenticate(key, clientKey(req));
  if (!auth) throw unauthorized('The x-api-key is unknown or revoked.');
  deps.rateLimit(auth.keyId, res);
  checkRequiredHeaders(req);
  return auth;
}

/**
 * The notification target a key sees the deliveries and health of: a merchant key its merchant's
 * target, a program key its program's own target (not its merchants'), as the issue's "a program-
 * level key sees its program's target" has it.
 */
export function ownTargetOf(scope: ApiKeyScope): TargetOwner {
  return scope.kind === 'merchant' ? { kind: 'merchant', merchantId: scope.merchantId } : { kind: 'program', programId: scope.programId };
}

function unauthorized(detail: string): HttpError {
  return new HttpError(401, 'unauthorized', 'Unauthorized', detail, { header: 'x-api-key' });
}
