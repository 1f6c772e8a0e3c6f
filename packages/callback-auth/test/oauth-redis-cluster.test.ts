// The OAuth token cache on a real Redis Cluster (three masters with a replica each, started by the
// test), through ioredis's cluster client as the delivery-worker uses it with a redis+cluster://
// REDIS_URL: one token request shared by two workers, the lock, and invalidate's compare-and-delete
// script, each a single-key command routed to the key's master.
import { randomBytes } from 'node:crypto';
import { startRedisCluster, type PrivateRedisCluster } from '@herald/testing';
import { Cluster } from 'ioredis';
import { createAuthStrategy, type AuthDependencies, type TargetAuthSettings } from '../src';
import { startFakeTokenEndpoint, type FakeTokenEndpoint } from './support/fake-token-endpoint';

let cluster: PrivateRedisCluster;
let endpoint: FakeTokenEndpoint;
const clients: Cluster[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
}, 60_000);
afterAll(async () => {
  for (const client of clients) client.disconnect();
  await cluster?.remove();
});
beforeEach(async () => {
  endpoint = await startFakeTokenEndpoint();
});
afterEach(() => endpoint.close());

/** A worker's dependencies on a cluster connection of its own, under the hash-tagged prefix Herald uses on a cluster. */
function workerDeps(keyPrefix: string, tokenCacheSecret: Buffer): AuthDependencies {
  const client = new Cluster(cluster.nodes.map((node) => ({ host: '127.0.0.1', port: node.port })));
  clients.push(client);
  return { redis: client, keyPrefix, tokenCacheSecret };
}

it('shares one token between two workers on a cluster, and fetches a new one after invalidate', async () => {
  const keyPrefix = `{test_${randomBytes(6).toString('hex')}}:`;
  const secret = randomBytes(32);
  const settings: TargetAuthSettings = { targetId: 'target-1', mode: 'oauth', authUrl: endpoint.url, username: 'merchant', password: 'secret-password' };
  const first = createAuthStrategy(settings, workerDeps(keyPrefix, secret));
  const second = createAuthStrategy(settings, workerDeps(keyPrefix, secret));

  const headers = await first.headers();
  expect(headers.Authorization ?? headers.authorization).toMatch(/^Bearer /);
  expect(await second.headers()).toEqual(headers);
  expect(endpoint.requests).toHaveLength(1);

  await second.invalidate();
  await first.headers();
  expect(endpoint.requests).toHaveLength(2);
});
