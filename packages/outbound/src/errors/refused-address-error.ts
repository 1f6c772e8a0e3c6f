/** The `code` of RefusedAddressError, which HTTP clients copy onto the connection error they report. */
export const REFUSED_ADDRESS_CODE = 'ERR_HERALD_ADDRESS_REFUSED';

/**
 * An outbound request would connect to an address the policy refuses (loopback, private, metadata,
 * ...). Thrown by the connect guard at connection time; the message names the host, the address and
 * its kind, none of which is a secret (the URL's path and query, which may be, are never included).
 */
export class RefusedAddressError extends Error {
  override readonly name = 'RefusedAddressError';
  readonly code = REFUSED_ADDRESS_CODE;

  constructor(
    readonly host: string,
    readonly address: string,
    /** e.g. "a loopback", as refusedAddressKind names it. */
    readonly kind: string,
  ) {
    super(`${address === host ? host : `${host} (${address})`} is ${kind} address; private targets are not allowed`);
  }
}
