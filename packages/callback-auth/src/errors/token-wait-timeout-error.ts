import { CallbackAuthError } from './callback-auth-error';

/**
 * Another process held the token-fetch lock for this target and no token appeared in the cache within
 * the wait bound. Not retried here: the delivery job fails this attempt and BullMQ retries it later.
 */
export class TokenWaitTimeoutError extends CallbackAuthError {
  readonly code = 'callback_auth_token_wait_timeout';
  override readonly name = 'TokenWaitTimeoutError';

  constructor(
    readonly targetId: string,
    readonly waitedMs: number,
  ) {
    super(`No OAuth token for target "${targetId}" appeared within ${waitedMs} ms while another process was fetching it`);
  }
}
