import { AuthConfigurationError } from './errors/auth-configuration-error';
import type { TargetAuthSettings } from './types';

/** A user name and password checked to be usable in a Basic header. */
export interface Credentials {
  readonly username: string;
  readonly password: string;
}

/** The user name and password of basic and oauth targets; both required, non-empty. */
export function requireCredentials(settings: TargetAuthSettings): Credentials {
  const { username, password, mode } = settings;
  if (typeof username !== 'string' || username === '') {
    throw new AuthConfigurationError('username', `Target "${settings.targetId}": ${mode} auth needs a username`);
  }
  // RFC 7617: the user-id of Basic credentials cannot contain a colon; the server would split it wrongly.
  if (username.includes(':')) {
    throw new AuthConfigurationError('username', `Target "${settings.targetId}": the username must not contain ':'`);
  }
  if (typeof password !== 'string' || password === '') {
    throw new AuthConfigurationError('password', `Target "${settings.targetId}": ${mode} auth needs a password`);
  }
  return { username, password };
}

/** `Basic base64(username:password)`, as both the basic mode and the OAuth token request send it. */
export function basicAuthorization({ username, password }: Credentials): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}
