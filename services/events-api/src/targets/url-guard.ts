import { isIP } from 'node:net';
import type { Violation } from '@herald/domain';
import { checksHost, firstRefusedAddress, policyHost, resolveHost, type AddressPolicy, type ResolveHost } from '@herald/outbound';

// Checks a notification target URL (or OAuth Authentication URL) when an admin sets it: its form,
// and, unless private targets are allowed, that its host is not an address inside Herald's own
// network (SSRF). The address rules live in @herald/outbound: a host name can resolve elsewhere
// later (DNS rebinding), so the delivery worker applies the same rules to the address it actually
// connects to at send time.

const HTTP_URL_START = /^https?:\/\//i;
// biome-ignore lint/suspicious/noControlCharactersInRegex: refuses control characters in a target URL on purpose
const WHITESPACE_OR_CONTROL = /[\s\u0000-\u001f\u007f]/;

/**
 * The problem with a target URL, or undefined when it may be used. `pointer` names the field in
 * the violation. Resolves the host (every address must be public) unless the policy allows
 * private targets or lists the host.
 */
export async function checkTargetUrl(
  value: string,
  pointer: string,
  policy: AddressPolicy,
  resolve: ResolveHost = resolveHost,
): Promise<Violation | undefined> {
  const invalid = (message: string): Violation => ({ pointer, keyword: 'format', message });
  // The WHATWG parser forgives a lot ("http:example.com", surrounding spaces); the stored string
  // must be what is meant, so ask for the plain form.
  if (!HTTP_URL_START.test(value) || WHITESPACE_OR_CONTROL.test(value)) return invalid('must be an absolute http or https URL');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return invalid('must be an absolute http or https URL');
  }
  if (url.username !== '' || url.password !== '') return invalid('must not contain a user name or password (set them in auth)');
  const host = policyHost(url);
  if (!checksHost(policy, host)) return undefined;
  let addresses: string[];
  try {
    addresses = isIP(host) === 0 ? await resolve(host) : [host];
  } catch {
    return { pointer, keyword: 'host', message: `host ${host} could not be resolved` };
  }
  if (addresses.length === 0) return { pointer, keyword: 'host', message: `host ${host} could not be resolved` };
  const refused = firstRefusedAddress(addresses);
  if (!refused) return undefined;
  const named = refused.address === host ? host : `${host} (${refused.address})`;
  return { pointer, keyword: 'host', message: `must not point at ${refused.kind} address: ${named}; private targets are not allowed` };
}
