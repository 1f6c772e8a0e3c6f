import dns from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { withTimeout } from '@herald/domain';
import { OutboundRequestError } from './errors/outbound-request-error';

// Which addresses Herald may send requests to on a merchant's behalf (notification target URLs and
// OAuth Authentication URLs). Unless private targets are allowed, every address a host resolves to
// must be public: a merchant-supplied URL must not reach into Herald's own network (SSRF). The
// events-api applies this when a target is set; the delivery worker applies it again to the
// address it actually connects to, since DNS answers change (DNS rebinding).

/** Where outbound requests to merchants may go; built from ALLOW_PRIVATE_TARGETS and TARGET_HOST_ALLOWLIST. */
export interface AddressPolicy {
  /** Loopback, private, link-local, CGNAT and metadata addresses are allowed (development, tests). */
  allowPrivate: boolean;
  /** Hosts always allowed, lower case, without brackets or trailing dot. */
  hostAllowlist: readonly string[];
}

/** A URL's host as the policy compares it: lower case, without IPv6 brackets or a trailing dot. */
export function policyHost(url: URL): string {
  return url.hostname
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
}

/** Whether the addresses of `host` (in policyHost form) must be checked: not when private targets are allowed or the host is listed. */
export function checksHost(policy: AddressPolicy, host: string): boolean {
  return !policy.allowPrivate && !policy.hostAllowlist.includes(host);
}

/** Every address a host name resolves to. */
export type ResolveHost = (hostname: string) => Promise<string[]>;

/** getaddrinfo has no timeout of its own; a hung resolver must not hang the caller. */
const RESOLVE_TIMEOUT_MS = 5_000;

/** dns.lookup with every address (as connections would resolve it, /etc/hosts included), bounded in time. */
export const resolveHost: ResolveHost = async (hostname) => {
  const addresses = await withTimeout(lookup(hostname, { all: true, verbatim: true }), RESOLVE_TIMEOUT_MS, `resolving ${hostname} timed out`);
  return addresses.map((a) => a.address);
};

// The address categories come from ipaddr.js, which follows IANA's IPv4 and IPv6 Special-Purpose
// Address Registries (one range table per family, with the RFC of each entry); a hand-written
// list misses forms like SIIT, 6to4 or site-local. What Herald adds: cloud metadata addresses,
// which no registry names, and the forms that embed an IPv4 address, whose embedded address
// decides, since a relay or translator on the way may deliver to it.

/** Cloud metadata services (AWS, GCP, Azure: 169.254.169.254; AWS over IPv6: fd00:ec2::254). */
const METADATA = ['169.254.169.254', 'fd00:ec2::254'].map((address) => ipaddr.parse(address));

/** The kind named in messages for each refused ipaddr.js range; a range not listed is "a reserved". */
const KINDS: Readonly<Record<string, string>> = {
  loopback: 'a loopback',
  unspecified: 'an unspecified',
  private: 'a private',
  uniqueLocal: 'a private',
  linkLocal: 'a link-local',
  carrierGradeNat: 'a shared (CGNAT)',
  deprecatedSiteLocal: 'a site-local',
};

/** 2000::/3: IANA's IPv6 global unicast space; the rest of IPv6 is reserved by the IETF (e.g. ::/96, IPv4-compatible). */
const GLOBAL_UNICAST: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('2000::'), 3];

/** What kind of refused address `address` is (e.g. "a loopback"), or undefined when it is public. */
export function refusedAddressKind(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return 'an unrecognised';
  const parsed = ipaddr.parse(address);
  if (METADATA.some((metadata) => metadata.kind() === parsed.kind() && metadata.toNormalizedString() === parsed.toNormalizedString()))
    return 'a cloud metadata';
  if (parsed.kind() === 'ipv4') return kindOfRange(parsed.range());
  const ipv6 = parsed as ipaddr.IPv6;
  const embedded = embeddedIpv4(ipv6);
  if (embedded) {
    for (const ipv4 of embedded) {
      const kind = refusedAddressKind(ipv4.toString());
      if (kind) return kind;
    }
    return undefined;
  }
  const range = ipv6.range();
  if (range === 'unicast' && !ipv6.match(GLOBAL_UNICAST)) return 'a reserved';
  return kindOfRange(range);
}

function kindOfRange(range: string): string | undefined {
  return range === 'unicast' ? undefined : (KINDS[range] ?? 'a reserved');
}

/**
 * The IPv4 addresses an IPv6 address carries, for the forms that carry one: IPv4-mapped
 * (::ffff:0:0/96), SIIT (::ffff:0:0:0/96, RFC 6145), NAT64 (64:ff9b::/96, RFC 6052), 6to4
 * (2002::/16, RFC 3056) and Teredo (2001::/32, RFC 4380: the server in clear, the client with every
 * bit inverted). Undefined for any other address.
 */
function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4[] | undefined {
  const bytes = address.toByteArray();
  const at = (offset: number, invert = false) => new ipaddr.IPv4(bytes.slice(offset, offset + 4).map((byte) => (invert ? byte ^ 0xff : byte)));
  switch (address.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return [at(12)];
    case 'rfc6052':
      // Only the well-known prefix embeds an address this way; 64:ff9b:1::/48 is for local use.
      return address.match(ipaddr.IPv6.parse('64:ff9b::'), 96) ? [at(12)] : undefined;
    case '6to4':
      return [at(2)];
    case 'teredo':
      return [at(4), at(12, true)];
    default:
      return undefined;
  }
}

/** The first of `addresses` the policy refuses, with its kind; undefined when every one is public. */
export function firstRefusedAddress(addresses: readonly string[]): { address: string; kind: string } | undefined {
  for (const address of addresses) {
    const kind = refusedAddressKind(address);
    if (kind) return { address, kind };
  }
  return undefined;
}

/**
 * The address policy applied at send time, to the address a request actually connects to. Checking
 * the resolved address inside the connection's own lookup leaves no gap between check and connect
 * for a DNS answer to change in (DNS rebinding).
 */
export interface ConnectGuard {
  /**
   * Throws OutboundRequestError (`address_refused`) when the URL's host is an IP address the
   * policy refuses. Connections to an IP address never call `lookup`, so this is their check; host
   * names pass here and are checked by `lookup`.
   */
  checkUrl(url: string | URL): void;
  /**
   * For the `lookup` option of a connection: resolves like dns.lookup and fails with
   * OutboundRequestError (`address_refused`) when any address of the host is refused. Undefined
   * when the policy allows private targets, so that nothing is in the way.
   */
  readonly lookup: LookupFunction | undefined;
}

type DnsLookup = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

/** The connect guard of `policy`; `dnsLookup` is for tests (default dns.lookup). */
export function createConnectGuard(policy: AddressPolicy, dnsLookup: DnsLookup = dns.lookup): ConnectGuard {
  const lookup: LookupFunction = (hostname, options, callback) => {
    const host = hostname.replace(/\.$/, '').toLowerCase();
    // Every address, as the admin-time check sees them: one refused address refuses the host, so a
    // client that would fall back from one address to the next can never reach a refused one.
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const refused = checksHost(policy, host) ? firstRefusedAddress(addresses.map((a) => a.address)) : undefined;
      if (refused) return callback(refusedAddress(host, refused.address, refused.kind), '');
      const [first] = addresses;
      if (options.all) return callback(null, addresses);
      if (!first) return callback(Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' }), '');
      return callback(null, first.address, first.family);
    });
  };

  return {
    checkUrl(url) {
      const host = policyHost(typeof url === 'string' ? new URL(url) : url);
      if (isIP(host) === 0 || !checksHost(policy, host)) return;
      const kind = refusedAddressKind(host);
      if (kind) throw refusedAddress(host, host, kind);
    },
    lookup: policy.allowPrivate ? undefined : lookup,
  };
}

/** Names the host, the address and its kind (e.g. "a loopback"), none of which is a secret; never the URL's path or query. */
function refusedAddress(host: string, address: string, kind: string): OutboundRequestError {
  return new OutboundRequestError('address_refused', `${address === host ? host : `${host} (${address})`} is ${kind} address; private targets are not allowed`);
}
