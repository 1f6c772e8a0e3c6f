import type { CallbackAuthStrategy } from '../types';

/** Callbacks carry no authentication header; the merchant relies on IP allow-listing (spec). */
export class NoAuthStrategy implements CallbackAuthStrategy {
  readonly mode = 'none';

  async headers(): Promise<Record<string, string>> {
    return {};
  }

  async invalidate(): Promise<void> {
    // Nothing is cached, so a 401 leaves nothing to forget.
  }
}
