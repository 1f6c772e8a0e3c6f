import http from 'node:http';

/**
 * POSTs JSON over Node's http client with keep-alive: the load generator of the latency sections.
 * It shares the machine's cores with the services it measures, so its own CPU shows up as their
 * latency: with fetch, the harness spent 2.1 ms of CPU per event at 100 events/s, with this 1.0 ms
 * (`bench/profile.ts e2e`, "this process"), and the machine's cores went from 84 % to 72 % busy.
 */
const agent = new http.Agent({ keepAlive: true });

export function postJson(url: string, token: string, body: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body));
    const request = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': payload.length, authorization: `Bearer ${token}` },
        timeout: 60_000,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`POST ${url}: no answer within 60 s`)));
    request.on('error', reject);
    request.end(payload);
  });
}
