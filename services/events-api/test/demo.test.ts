import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { runCommand, startService, testDatabaseUrl, uniqueId, type CommandRun } from '@herald/testing';

const ROOT = path.resolve(__dirname, '../../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const DEMO = path.join(ROOT, 'services/events-api/src/cli/demo.ts');
const ADMIN_TOKEN = randomBytes(24).toString('base64url');
const INGEST_TOKEN = randomBytes(24).toString('base64url');

/** Runs `pnpm demo` as a newcomer would, with only the settings given (and the system's). */
const demo = (env: Record<string, string>): Promise<CommandRun> => runCommand(TSX, [DEMO], env);

describe('pnpm demo', () => {
  let apiUrl: string;

  beforeAll(async () => {
    // The whole system, as `pnpm start` runs it: the events-api and one delivery-worker on one queue.
    const shared = { NODE_ENV: 'test', LOG_LEVEL: 'info', DATABASE_URL: testDatabaseUrl(), QUEUE_PREFIX: uniqueId('demo'), ALLOW_PRIVATE_TARGETS: 'true' };
    const api = startService('services/events-api/src/server.ts', { ...shared, PORT: '0', ADMIN_TOKEN, INGEST_TOKEN });
    const worker = startService('services/delivery-worker/src/main.ts', { ...shared, METRICS_PORT: '0' });
    const listening = await api.waitForLog('events-api listening', 90_000);
    await worker.waitForLog('delivery-worker ready', 90_000);
    apiUrl = `http://127.0.0.1:${String(listening.port)}`;
  }, 120_000);

  it('shows the callbacks of its sample events arriving, lists them with GET /events and exits 0; a second run reuses the tenants', async () => {
    for (let run = 1; run <= 2; run += 1) {
      const result = await demo({ HERALD_API_URL: apiUrl, ADMIN_TOKEN, INGEST_TOKEN });
      expect({ run, code: result.code, stderr: result.stderr }).toEqual({ run, code: 0, stderr: '' });
      expect(result.stdout.match(/callback received {2}webhook-id Event-.*\(signature verified\)/g)).toHaveLength(3);
      expect(result.stdout).toMatch(/GET \/events\?objectId=pay_demo_\w+ as the merchant: 2 event\(s\)/);
      // The key is shown once, for the commands to go on with.
      expect(result.stdout).toMatch(/export HERALD_KEY=\S{20,}/);
    }
  });

  it('says how to start Herald when nothing answers, and exits 1', async () => {
    const result = await demo({ HERALD_API_URL: 'http://127.0.0.1:9', ADMIN_TOKEN, INGEST_TOKEN });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/Herald does not answer at http:\/\/127\.0\.0\.1:9 .*pnpm start/);
  });

  it('names the token the API refused', async () => {
    const result = await demo({ HERALD_API_URL: apiUrl, ADMIN_TOKEN: 'not-the-admin-token', INGEST_TOKEN });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/Creating the demo program failed: HTTP 401/);
  });
});
