/**
 * One raw POST over node:http with a keep-alive agent: the transport the delivery worker's sender
 * uses too, without Herald's work around it. Shared by the raw POST loop and the bare worker.
 */
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';

/** A callback body of the size of a small event. */
const RAW_CALLBACK_BODY = JSON.stringify({
  id: `Event-${randomUUID()}`,
  createdAt: new Date().toISOString(),
  origin: 'api',
  eventType: 'created',
  objectId: 'pay-000001',
  objectType: 'payment',
});

export function createRawPoster(): { post(url: string): Promise<void>; close(): void } {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  return {
    post: (url) =>
      new Promise((resolve, reject) => {
        const req = request(
          url,
          { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(RAW_CALLBACK_BODY) }, timeout: 10_000 },
          (res) => {
            res.resume();
            res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`receiver answered ${res.statusCode}`))));
          },
        );
        req.on('timeout', () => req.destroy(new Error('raw POST timed out')));
        req.on('error', reject);
        req.end(RAW_CALLBACK_BODY);
      }),
    close: () => agent.destroy(),
  };
}
