/**
 * How one callback POST failed before the merchant's status came back:
 * - `timeout`: no status within CALLBACK_TIMEOUT_MS;
 * - `connection`: the connection could not be made or broke (refused, reset, DNS);
 * - `tls`: the TLS handshake failed (certificate not valid for the host, expired, self-signed, ...);
 * - `address_refused`: the host is, or resolves to, an address private targets may not use (SSRF).
 */
export type CallbackRequestFailureKind = 'timeout' | 'connection' | 'tls' | 'address_refused';

/**
 * One callback POST got no answer. The message is built from fixed phrases, numbers and system
 * error codes only: never the URL (merchants put secrets in query strings), headers or body.
 */
export class CallbackRequestError extends Error {
  override readonly name = 'CallbackRequestError';
  readonly code = 'callback_request_failed';

  constructor(
    readonly kind: CallbackRequestFailureKind,
    message: string,
    /** The system error behind a `connection` or `tls` failure, e.g. 'ECONNREFUSED'. */
    readonly causeCode?: string,
  ) {
    super(message);
  }
}
