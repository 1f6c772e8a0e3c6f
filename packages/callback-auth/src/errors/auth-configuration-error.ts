import { CallbackAuthError } from './callback-auth-error';

/**
 * The target's auth settings or the module's dependencies are unusable (missing credentials, a bad
 * authUrl, a bad option). Retrying cannot help: the settings must be fixed. The message names the
 * field and never repeats its value, which may be a secret.
 */
export class AuthConfigurationError extends CallbackAuthError {
  readonly code = 'callback_auth_invalid_configuration';
  override readonly name = 'AuthConfigurationError';

  constructor(
    /** The setting or option at fault, e.g. 'authUrl' or 'tokenRequestTimeoutMs'. */
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}
