import http from 'node:http';

/** One answer, as the fault scenarios judge it. */
export interface RawAnswer {
  status: number;
  contentType: string;
  body: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

/**
 * Sends one request with node:http (no client-side normalisation of the path or the body),
 * within `timeoutMs`. Headers are sent as given; `body` as is.
 */
export function rawRequest(
  origin: string,
  options: { method: string; path: string; headers: Record<string, string>; body?: string | Buffer; localAddress?: string },
  timeoutMs = 20_000,
): Promise<RawAnswer> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = http.request(
      // localAddress: a client address of 127.0.0.0/8 other than 127.0.0.1, to look like many clients.
      {
        host: url.hostname,
        port: url.port,
        method: options.method,
        path: options.path,
        headers: options.headers,
        agent,
        timeout: timeoutMs,
        localAddress: options.localAddress,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` at once. */
export async function pool(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await task(next++);
    }),
  );
}
