import { AuthConfigurationError } from './errors/auth-configuration-error';
import { UnknownAuthModeError } from './errors/unknown-auth-mode-error';
import { BasicAuthStrategy } from './strategies/basic-strategy';
import { NoAuthStrategy } from './strategies/none-strategy';
import { OAuthStrategy } from './strategies/oauth-strategy';
import type { AuthDependencies, CallbackAuthStrategy, TargetAuthSettings } from './types';

/**
 * The strategy for one target's auth mode. Settings are checked here, so a target with unusable
 * settings fails at once with `AuthConfigurationError`, and an unknown mode with `UnknownAuthModeError`.
 * Cheap to call per callback: everything shared lives in Redis or in module state.
 */
export function createAuthStrategy(settings: TargetAuthSettings, deps: AuthDependencies): CallbackAuthStrategy {
  if (typeof settings.targetId !== 'string' || settings.targetId === '') {
    throw new AuthConfigurationError('targetId', 'targetId must be a non-empty string');
  }
  switch (settings.mode) {
    case 'none':
      return new NoAuthStrategy();
    case 'basic':
      return new BasicAuthStrategy(settings);
    case 'oauth':
      return new OAuthStrategy(settings, deps);
    default: {
      const mode: never = settings.mode;
      throw new UnknownAuthModeError(settings.targetId, mode);
    }
  }
}
