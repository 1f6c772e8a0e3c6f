import { HeraldError } from '@herald/domain';

/**
 * How an outbound request failed, one vocabulary for callbacks and token requests alike:
 * - `timeout`: no answer, or no complete answer, within the request's time limit;
 * - `connection`: the connection could not be made or broke (refused, reset, DNS);
 * - `tls`: the TLS handshake failed (certificate not valid for the host, expired, self-signed, ...);
 * - `address_refused`: the host is, or resolves to, an address the policy refuses (SSRF);
 * - `response_too_large`: the body ran past the request's maxResponseBytes (only when the request
 *   asked for the whole body, see OutboundRequest.partialBody).
 */
export type OutboundFailureKind = 'timeout' | 'connection' | 'tls' | 'address_refused' | 'response_too_large';

/**
 * One outbound request got no usable answer. The message is built from fixed phrases, numbers,
 * system error codes and, for `address_refused`, the host and address: never the URL's path or
 * query (merchants put secrets there), headers or body.
 */
export class OutboundRequestError extends HeraldError {
  readonly code = 'outbound_request_failed';

  constructor(
    readonly kind: OutboundFailureKind,
    message: string,
    /** The system error behind a `connection` or `tls` failure, e.g. 'ECONNREFUSED'. */
    readonly causeCode?: string,
    /** The status of an answer whose body then failed (`timeout`, `connection` or `response_too_large`). */
    readonly status?: number,
  ) {
    super(message);
  }
}
