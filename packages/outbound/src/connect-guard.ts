import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { checksHost, firstRefusedAddress, policyHost, refusedAddressKind, type AddressPolicy } from './address-policy';
import { OutboundRequestError } from './errors/outbound-request-error';

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
