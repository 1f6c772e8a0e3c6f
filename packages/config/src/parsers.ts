/**
 * The small parsers every loader shares: each reads one variable, applies its default and throws a
 * ConfigError naming the variable when the value is malformed. An empty or blank value counts as unset.
 */
import { isIP } from 'node:net';
import { ConfigError } from './config-error';

/** The environment a loader reads: process.env by default, a plain object in tests. */
export type Env = Readonly<Record<string, string | undefined>>;

// Bearer tokens are pasted into other systems' configuration: long enough to be unguessable.
const PRODUCTION_TOKEN_MIN_LENGTH = 32;

/** The trimmed value, or undefined when the variable is unset or blank. */
export function raw(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${value}"`);
  }
  return value as T;
}

export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new ConfigError(name, `must be a whole number, got "${value}"`);
  const parsed = Number(value);
  if (parsed < min || parsed > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${parsed}`);
  return parsed;
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A duration in milliseconds, written as whole seconds (`90`) or with one unit: `45s`, `30m`,
 * `12h`, `5d`. `0` is allowed when `min` is 0 (settings use it for "off").
 */
export function duration(env: Env, name: string, fallbackMs: number, minMs: number, maxMs: number): number {
  const value = raw(env, name);
  if (value === undefined) return fallbackMs;
  const match = /^(\d{1,9})([smhd]?)$/.exec(value);
  if (!match) throw new ConfigError(name, `must be whole seconds or a number with a unit s, m, h or d (e.g. 5d, 12h), got "${value}"`);
  const parsed = Number(match[1]) * DURATION_UNITS_MS[match[2] || 's']!;
  if (parsed < minMs || parsed > maxMs) throw new ConfigError(name, `must be between ${minMs / 1000} and ${maxMs / 1000} seconds, got "${value}"`);
  return parsed;
}

export function fraction(env: Env, name: string, fallback: number): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!/^\d*\.?\d+$/.test(value) || parsed > 1) throw new ConfigError(name, `must be a number from 0 to 1, got "${value}"`);
  return parsed;
}

export function boolean(env: Env, name: string, fallback: boolean): boolean {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (value !== 'true' && value !== 'false') throw new ConfigError(name, `must be true or false, got "${value}"`);
  return value === 'true';
}

// A DNS name (letters, digits, hyphens, dots) or an IP address; IPv6 without brackets.
const HOST = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

export function hostList(env: Env, name: string): readonly string[] {
  const value = raw(env, name);
  if (value === undefined) return Object.freeze([]);
  const hosts = value
    .split(',')
    .map((host) => host.trim().toLowerCase())
    .filter((host) => host !== '');
  for (const host of hosts) {
    if (!HOST.test(host) && isIP(host) === 0) throw new ConfigError(name, `"${host}" is not a host name or IP address`);
  }
  // A trailing dot names the same host; store the form URLs are compared in.
  return Object.freeze(hosts.map((host) => host.replace(/\.$/, '')));
}

/** A comma-separated list of IP addresses and CIDR ranges (`198.51.100.0/24`, `2001:db8::/48`), as written. */
export function addressList(env: Env, name: string): readonly string[] {
  const value = raw(env, name);
  if (value === undefined) return Object.freeze([]);
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    const [address = '', prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk || rest.length > 0) throw new ConfigError(name, `"${entry}" is not an IP address or a CIDR range`);
  }
  return Object.freeze(entries);
}

/**
 * An address to listen on: an IP address or a host name, or undefined for every interface (Node's
 * default: `::`, which also takes IPv4). `0.0.0.0` and `::` are kept as written.
 */
export function listenHost(env: Env, name: string, fallback: string | undefined): string | undefined {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  if (isIP(value) === 0 && !HOST.test(value))
    throw new ConfigError(name, `must be an IP address or a host name (e.g. 127.0.0.1, or 0.0.0.0 for every interface), got "${value}"`);
  return value;
}

export function text(env: Env, name: string, fallback: string, pattern: RegExp): string {
  const value = raw(env, name) ?? fallback;
  if (!pattern.test(value)) throw new ConfigError(name, `must match ${pattern}`);
  return value;
}

export function url(env: Env, name: string, protocols: string[], fallback: string): string {
  const value = raw(env, name) ?? fallback;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(name, 'is not a valid URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return value;
}

// The weakest value a production secret may be: a single repeated character, or a short pattern
// repeated, has fewer distinct characters than this; a random token or password has many more.
const SECRET_MIN_DISTINCT_CHARACTERS = 8;

// Sent in an HTTP header and compared byte for byte: a control character or a space would not survive the trip.
const HEADER_SAFE = /^[\x21-\x7e]+$/;

/** How a secret read by `token` is checked, beyond being set and not the development default in production. */
export interface TokenRules {
  /** Shortest value production accepts. Default 32 (a bearer token). */
  readonly minLength?: number;
  /**
   * Whether the value travels verbatim in a header (a bearer token), so it must be printable ASCII
   * without spaces, in every environment. Default true; false for a password typed into a login box.
   */
  readonly headerSafe?: boolean;
}

/**
 * A secret with a development default: outside production the default stands in for it; in
 * production it is required, may not be the default, must be at least `minLength` long and hold
 * at least SECRET_MIN_DISTINCT_CHARACTERS distinct characters.
 */
export function token(env: Env, name: string, devDefault: string, production: boolean, rules: TokenRules = {}): string {
  const { minLength = PRODUCTION_TOKEN_MIN_LENGTH, headerSafe = true } = rules;
  const value = raw(env, name);
  if (value !== undefined && headerSafe && !HEADER_SAFE.test(value)) throw new ConfigError(name, 'must be printable ASCII without spaces');
  if (!production) return value ?? devDefault;
  if (value === undefined) throw new ConfigError(name, 'is required when NODE_ENV=production');
  if (value === devDefault) throw new ConfigError(name, 'must not be the development default in production');
  if (value.length < minLength) {
    throw new ConfigError(name, `must be at least ${minLength} characters in production`);
  }
  if (new Set(value).size < SECRET_MIN_DISTINCT_CHARACTERS) {
    throw new ConfigError(name, `must hold at least ${SECRET_MIN_DISTINCT_CHARACTERS} distinct characters in production`);
  }
  return value;
}

/**
 * Production secrets that must not be one and the same value: each grants something different, so
 * one leaked secret must not open the others. Throws naming the later variable of the first equal pair.
 */
export function requireDistinct(production: boolean, secrets: ReadonlyArray<readonly [name: string, value: string]>): void {
  if (!production) return;
  secrets.forEach(([name, value], index) => {
    const earlier = secrets.slice(0, index).find(([, other]) => other === value);
    if (earlier) throw new ConfigError(name, `must differ from ${earlier[0]}`);
  });
}

/** A secret with no default that turns a protection on when set, in every environment. */
export function optionalSecret(env: Env, name: string, minLength: number): string | undefined {
  const value = raw(env, name);
  if (value === undefined) return undefined;
  if (value.length < minLength) throw new ConfigError(name, `must be at least ${minLength} characters`);
  if (!HEADER_SAFE.test(value)) throw new ConfigError(name, 'must be printable ASCII without spaces');
  return value;
}

/** A 32-byte key written as 64 hex characters or as base64; `name` is for the error message. */
export function parseKey(name: string, value: string): Buffer {
  const hex = /^[0-9a-fA-F]{64}$/.test(value);
  const parsed = hex ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  // Buffer.from(..., 'base64') ignores bad characters, so check the round trip as well as the length.
  const isBase64 = parsed.toString('base64').replace(/=+$/, '') === value.replace(/=+$/, '');
  if (parsed.length !== 32 || (!hex && !isBase64)) {
    throw new ConfigError(name, 'must be 32 bytes, written as 64 hex characters or as base64');
  }
  return parsed;
}
