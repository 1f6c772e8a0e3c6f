import ipaddr from 'ipaddr.js';

/**
 * Whom a connection or request is counted against: its IPv4 address, or the /64 network of its
 * IPv6 address (one host usually holds a whole /64, so counting single IPv6 addresses would give it
 * billions of budgets). The address is the TCP peer's: neither service trusts X-Forwarded-For.
 */
export function addressKey(address: string | undefined): string {
  if (!address || !ipaddr.isValid(address)) return 'unknown';
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${(parsed as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(':')}::/64`;
}
