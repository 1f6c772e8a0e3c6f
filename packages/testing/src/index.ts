import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { testDatabaseUrl } from '@herald/config';
import { dropDatabase, ensureDatabase } from '@herald/db';

export { testDatabaseUrl };

/** A fresh name for tenants, queue prefixes and databases, so tests never depend on order. */
export function uniqueId(prefix = 't'): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/** The test database URL pointing at another database on the same server. */
export function databaseUrlFor(name: string): string {
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/** Creates an empty database for one test; `drop()` removes it. */
export async function createScratchDatabase(prefix = 'herald_scratch'): Promise<{ url: string; drop: () => Promise<void> }> {
  const url = databaseUrlFor(uniqueId(prefix).toLowerCase());
  await ensureDatabase(url);
  return { url, drop: () => dropDatabase(url) };
}

/** A TCP port on 127.0.0.1 that nothing listens on (at the moment of the call). */
export async function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export { startService, type ServiceProcess } from './process';
export { always, inTurn, startHttpRecorder, type HttpRecorder, type RecordedRequest, type Reply, type Responder } from './http-recorder';
export { metricValue, parseExposition, type Sample } from './prometheus';
export { storeEvents } from './store-events';
