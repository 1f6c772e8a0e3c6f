import { basicAuthorization, requireCredentials } from '../credentials';
import type { CallbackAuthStrategy, TargetAuthSettings } from '../types';

/** Every callback carries `Authorization: Basic base64(username:password)` (spec). */
export class BasicAuthStrategy implements CallbackAuthStrategy {
  readonly mode = 'basic';
  readonly #authorization: string;

  constructor(settings: TargetAuthSettings) {
    this.#authorization = basicAuthorization(requireCredentials(settings));
  }

  async headers(): Promise<Record<string, string>> {
    return { authorization: this.#authorization };
  }

  async invalidate(): Promise<void> {
    // The credentials are fixed settings: a 401 means they are wrong, and forgetting them cannot help.
  }
}
