/**
 * Where and how Herald sends outbound HTTP on a merchant's behalf: the address policy (SSRF guard)
 * that the events-api applies when a target URL is set, and the one outbound client that the
 * delivery worker sends callbacks and OAuth token requests with (over Node's http client or axios).
 */
export { checksHost, firstRefusedAddress, policyHost, refusedAddressKind, resolveHost, type AddressPolicy, type ResolveHost } from './address-policy';
export { createConnectGuard, type ConnectGuard } from './address-policy';
export { createOutboundClient, type OutboundClient, type OutboundRequest, type OutboundResponse, type OutboundTransport } from './outbound-client';
export { OutboundRequestError, type OutboundFailureKind } from './errors/outbound-request-error';
export { parseRetryAfter } from './retry-after';
