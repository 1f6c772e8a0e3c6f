/**
 * Where Herald may send outbound HTTP on a merchant's behalf: the address policy (SSRF guard) that
 * the events-api applies when a target URL is set and the delivery worker applies when it connects.
 */
export { checksHost, firstRefusedAddress, policyHost, refusedAddressKind, resolveHost, type AddressPolicy, type ResolveHost } from './address-policy';
export { createConnectGuard, type ConnectGuard } from './connect-guard';
export { REFUSED_ADDRESS_CODE, RefusedAddressError } from './errors/refused-address-error';
