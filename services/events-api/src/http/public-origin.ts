import type { Request } from 'express';

// A host name or address, with an optional port: anything else in Host is never echoed back.
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The events-api's base URL for links and documents: PUBLIC_URL when set; otherwise as the request
 * reached it, whose scheme is the connection's (http behind a TLS-terminating proxy, which is what
 * PUBLIC_URL is for). Null when the request's Host is missing or not a plain host.
 */
export function publicBaseUrl(req: Request, publicUrl: string | undefined): string | null {
  if (publicUrl) return publicUrl.replace(/\/$/, '');
  const host = req.get('host');
  return host && HOST.test(host) ? `${req.protocol}://${host}` : null;
}
