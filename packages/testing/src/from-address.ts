import http from 'node:http';

/** An answer of getFrom. */
export interface AnswerFrom {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * GET `url` (http, on loopback) from the client address `from` of 127.0.0.0/8, on a connection of
 * its own, so that the server sees `from` as the TCP peer: how tests play several clients of
 * per-address limits. Rejects when no answer came within `timeoutMs` (default 5 s).
 */
export function getFrom(url: string, from: string, headers: Record<string, string> = {}, timeoutMs = 5_000): Promise<AnswerFrom> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { localAddress: from, agent: false, timeout: timeoutMs, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}
