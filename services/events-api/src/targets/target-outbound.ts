import {
  AuthConfigurationError,
  checkOAuthCredentials,
  createAuthStrategy,
  formEncodingChanges,
  TokenRequestError,
  type AuthDependencies,
  type CheckedOAuthCredentials,
} from '@herald/callback-auth';
import { callbackFailure, sendCallback, testCallbackMessage, type AttemptErrorKind, type CallbackResult, type SendCallback } from '@herald/callbacks';
import type { DeliveryTarget, OAuthTargetAuth, TargetOwner } from '@herald/db';
import { targetOwnerKey } from '@herald/db';
import { signingSecretsInUse } from '@herald/domain';
import { HttpError } from '../http/http-error';

/**
 * What the API sends to a merchant on an admin's request, as the delivery worker would: the token
 * request that checks an OAuth target's credentials, and test callbacks. Both go out through the
 * address policy at connect time, and share the worker's token cache (same Redis, prefix, secret).
 */
export interface TargetOutbound {
  /** Redis, the cache's key prefix and secret, the token request's limits and its outbound client. */
  auth: AuthDependencies;
  /** Sends a callback POST (the worker's sender, with CALLBACK_TIMEOUT_MS and CALLBACK_RESPONSE_MAX_BYTES). */
  send: SendCallback;
}

/** What a test callback did, as the API answers it. */
export interface TestCallbackReport {
  /** The test callback's webhook-id (`Test-<uuid>`), to find it in the merchant's logs. */
  webhookId: string;
  /** HTTP 200, and only 200, counts, as for events. */
  delivered: boolean;
  /** The merchant's status, when it answered. */
  statusCode?: number;
  /** From just before the first request (a token request included) to the end of the answer. */
  durationMs: number;
  /** Why it was not delivered, in the attempt log's vocabulary. */
  errorKind?: AttemptErrorKind;
  errorMessage?: string;
  /** The first CALLBACK_RESPONSE_MAX_BYTES of the answer, redacted as stored answers are. */
  responseBody?: string;
}

/**
 * One token request with an OAuth target's new settings; throws a 422 naming `/auth` and the
 * token endpoint's answer when no token comes of it.
 */
export async function checkCredentials(owner: TargetOwner, auth: OAuthTargetAuth, outbound: TargetOutbound): Promise<CheckedOAuthCredentials> {
  try {
    // The target may not exist yet: its owner names it in messages until it has an id.
    return await checkOAuthCredentials({ targetId: targetOwnerKey(owner), ...auth }, outbound.auth);
  } catch (error) {
    if (error instanceof TokenRequestError) throw credentialsRejected(error, auth);
    if (error instanceof AuthConfigurationError) {
      throw new HttpError(422, 'credentials_rejected', 'OAuth settings unusable', error.message, {
        errors: [{ pointer: `/auth/${error.field}`, message: error.message }],
      });
    }
    throw error;
  }
}

function credentialsRejected(error: TokenRequestError, auth: OAuthTargetAuth): HttpError {
  const { status, oauthError } = error;
  const message = `the token endpoint issued no token: ${error.detail}${postHint(error, auth)}`;
  return new HttpError(
    422,
    'credentials_rejected',
    'OAuth credentials rejected',
    `Checking the OAuth settings, ${message}. Fix auth (authUrl, username, password, tokenRequest, scope), or save with ?verify=false to skip the check.`,
    {
      errors: [{ pointer: '/auth', message }],
      tokenEndpoint: {
        failure: error.kind,
        ...(status === undefined ? {} : { status }),
        ...(oauthError === undefined
          ? {}
          : { error: oauthError.error, ...(oauthError.description === undefined ? {} : { errorDescription: oauthError.description }) }),
      },
    },
  );
}

/**
 * When a form request's credentials were refused and they hold characters the form encodes in
 * the Basic header: many servers (passport-http, @node-oauth/oauth2-server, ...) never decode
 * it, so they read other credentials. client_secret_post sends them where every server decodes.
 */
function postHint(error: TokenRequestError, auth: OAuthTargetAuth): string {
  const refused = error.kind === 'http_status' && (error.status === 400 || error.status === 401);
  if (auth.tokenRequest !== 'form' || !refused || !formEncodingChanges(auth)) return '';
  return (
    '. The username or password holds characters (a space, %, +, &, =, ...) that the form request encodes in its Basic header ' +
    '(RFC 6749 §2.3.1), which many servers do not decode: try tokenRequest "client_secret_post", which sends them in the body'
  );
}

/** Sends one test callback to `target` now, with its auth mode, outside the queue; stores nothing. */
export async function sendTestCallback(target: DeliveryTarget, outbound: TargetOutbound): Promise<TestCallbackReport> {
  const message = testCallbackMessage(target.url, signingSecretsInUse(target.signing.secrets, target.signing.graceEndsAt, new Date()));
  const started = performance.now();
  let result: CallbackResult;
  try {
    const auth = createAuthStrategy({ targetId: target.id, ...target.auth }, outbound.auth);
    result = await sendCallback(message, { auth, send: outbound.send, knownSecrets: target.auth.mode === 'none' ? [] : [target.auth.password] });
  } catch (error) {
    result = callbackFailure(error);
  }
  const durationMs = Math.round(performance.now() - started);
  return {
    webhookId: message.webhookId,
    delivered: result.delivered,
    ...(result.statusCode === undefined ? {} : { statusCode: result.statusCode }),
    durationMs,
    ...(result.delivered ? {} : { errorKind: result.errorKind, errorMessage: result.errorMessage }),
    ...(result.responseBody === undefined ? {} : { responseBody: result.responseBody }),
  };
}
