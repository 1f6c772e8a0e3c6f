import type { Request } from 'express';
import { addressKey } from '@herald/lifecycle';

/**
 * The request's client address as the TCP peer reports it. `req.ip` follows Express's `trust
 * proxy` setting, which the app leaves off: the TCP peer.
 */
export function peerAddress(req: Request): string | undefined {
  return req.ip ?? req.socket.remoteAddress;
}

/** Whom a request is counted against (addressKey of its peer: an IPv4 address or an IPv6 /64). */
export function clientKey(req: Request): string {
  return addressKey(peerAddress(req));
}
