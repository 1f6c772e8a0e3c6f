import { CallbackAuthError } from './callback-auth-error';

/** The target's auth mode is none of 'none', 'basic', 'oauth' (a bad row or a newer writer). */
export class UnknownAuthModeError extends CallbackAuthError {
  readonly code = 'callback_auth_unknown_mode';
  override readonly name = 'UnknownAuthModeError';

  constructor(
    readonly targetId: string,
    readonly mode: unknown,
  ) {
    // The mode is not a secret, but it is unvalidated input: quote it and keep it short.
    super(`Target "${targetId}" has an unknown callback auth mode ${JSON.stringify(String(mode).slice(0, 40))}`);
  }
}
