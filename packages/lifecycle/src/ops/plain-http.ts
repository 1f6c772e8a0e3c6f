/**
 * Framework-free HTTP answers: handlers take a `PlainRequest` and return a `PlainResponse`, and a
 * small adapter per server (Express in the events-api, node:http in the delivery-worker) writes it,
 * so both services answer with the same bytes.
 */

/** The parts of a request the ops handlers read. */
export interface PlainRequest {
  /** The `Authorization` header, if any. */
  authorization: string | undefined;
  /**
   * The client's address as the TCP peer reports it (`socket.remoteAddress`): whose failed
   * authentications a wrong credential counts as. No service trusts X-Forwarded-For.
   */
  clientAddress: string | undefined;
}

/** An answer, ready to write as it is. */
export interface PlainResponse {
  status: number;
  /** Response headers, `Content-Type` always among them. */
  headers: Readonly<Record<string, string>>;
  body: string;
}

export type PlainHandler = (request: PlainRequest) => Promise<PlainResponse>;

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** A JSON answer. */
export function jsonResponse(status: number, body: unknown): PlainResponse {
  return { status, headers: { 'Content-Type': JSON_CONTENT_TYPE }, body: JSON.stringify(body) };
}
