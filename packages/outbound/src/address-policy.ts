import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { withTimeout } from '@herald/domain';

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
  return url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
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

function blockList(subnets: readonly string[]): BlockList {
  const list = new BlockList();
  for (const subnet of subnets) {
    const [network, prefix] = subnet.split('/') as [string, string];
    list.addSubnet(network, Number(prefix), isIP(network) === 6 ? 'ipv6' : 'ipv4');
  }
  return list;
}

// Most specific first, so that the message names the closest category. Node's BlockList matches
// IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) against the IPv4 rules as well.
const REFUSED: ReadonlyArray<readonly [string, BlockList]> = [
  ['a cloud metadata', blockList(['169.254.169.254/32', 'fd00:ec2::254/128'])],
  ['a loopback', blockList(['127.0.0.0/8', '::1/128'])],
  ['an unspecified', blockList(['0.0.0.0/8', '::/128'])],
  ['a private', blockList(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'])],
  ['a link-local', blockList(['169.254.0.0/16', 'fe80::/10'])],
  ['a shared (CGNAT)', blockList(['100.64.0.0/10'])],
  [
    'a reserved',
    blockList([
      '192.0.0.0/24', // IETF protocol assignments
      '198.18.0.0/15', // benchmarking
      '224.0.0.0/4', // multicast
      '240.0.0.0/4', // reserved, and the broadcast address
      'ff00::/8', // multicast
      '::/96', // deprecated IPv4-compatible addresses
      '64:ff9b:1::/48', // local-use NAT64
    ]),
  ],
];

// Well-known NAT64 prefix: the last 32 bits are an IPv4 address, which decides.
const NAT64 = blockList(['64:ff9b::/96']);

/** What kind of refused address `address` is (e.g. "a loopback"), or undefined when it is public. */
export function refusedAddressKind(address: string): string | undefined {
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  if (family === 'ipv6' && NAT64.check(address, 'ipv6')) return refusedAddressKind(embeddedIpv4(address));
  return REFUSED.find(([, list]) => list.check(address, family))?.[0];
}

/** The first of `addresses` the policy refuses, with its kind; undefined when every one is public. */
export function firstRefusedAddress(addresses: readonly string[]): { address: string; kind: string } | undefined {
  for (const address of addresses) {
    const kind = refusedAddressKind(address);
    if (kind) return { address, kind };
  }
  return undefined;
}

function embeddedIpv4(ipv6: string): string {
  // The URL parser writes the address in canonical compressed form; the groups left out by "::"
  // are zeros, so the last two groups written (or zeros) are the last 32 bits.
  const groups = new URL(`http://[${ipv6}]/`).hostname.slice(1, -1).split(':');
  const [high, low] = groups.slice(-2).map((group) => Number.parseInt(group || '0', 16)) as [number, number];
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}
