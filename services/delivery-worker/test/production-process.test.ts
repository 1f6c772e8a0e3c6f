import { randomBytes } from 'node:crypto';
import { always, startService, useMigratedDatabase, type ServiceProcess } from '@herald/testing';
import { useHttpRecorders, useWorlds } from './support/world';

// A database of its own: the worker's sweeper enqueues every forgotten delivery it finds, and must
// not find the other test files' deliveries.
const database = useMigratedDatabase('herald_worker_production');

const world = useWorlds();
const startReceiver = useHttpRecorders();
let service: ServiceProcess | undefined;
afterEach(async () => {
  await service?.stop('SIGKILL');
  service = undefined;
});

describe('a production delivery-worker process', () => {
  it('starts and delivers with only DATABASE_URL, REDIS_URL and SECRETS_KEY (and its own settings) set', async () => {
    const secretsKey = randomBytes(32).toString('hex');
    // The test stores the target's credentials under the same key the worker is given.
    const w = world({ SECRETS_KEY: secretsKey }, database.url);
    const receiver = await startReceiver(always({ status: 200 }));
    const { programId } = await w.createTarget(`${receiver.origin}/hook`, { mode: 'basic', username: 'merchant', password: 's3cret-pass' });
    const [sent] = await w.sendEvents(programId, 1);

    // The process gets this environment and nothing else: no ADMIN_TOKEN, INGEST_TOKEN or
    // DASHBOARD_PASSWORD set in the shell can reach it.
    service = startService(
      'services/delivery-worker/src/main.ts',
      {
        NODE_ENV: 'production',
        DATABASE_URL: database.url,
        REDIS_URL: w.config.redisUrl,
        SECRETS_KEY: secretsKey,
        // The worker's own optional settings: this test's queue, a free monitoring port, and the
        // loopback receiver allowed by name (production refuses private targets by default).
        QUEUE_PREFIX: w.config.queuePrefix,
        METRICS_PORT: '0',
        TARGET_HOST_ALLOWLIST: '127.0.0.1',
      },
      { inheritEnv: false },
    );
    expect(Object.keys(service.env).sort()).toEqual([
      'DATABASE_URL',
      'METRICS_PORT',
      'NODE_ENV',
      'QUEUE_PREFIX',
      'REDIS_URL',
      'SECRETS_KEY',
      'TARGET_HOST_ALLOWLIST',
    ]);
    await service.waitForLog('delivery-worker ready');

    const [delivery] = await w.settled([sent!.deliveryId], ['succeeded'], 20_000);
    expect(delivery!.status).toBe('succeeded');
    expect(receiver.requests).toHaveLength(1);
    const [callback] = receiver.requests;
    expect(callback!.url).toBe('/hook');
    expect(callback!.headers['webhook-id']).toBe(sent!.event.id);
    // Decrypted with the production SECRETS_KEY.
    expect(callback!.headers.authorization).toBe(`Basic ${Buffer.from('merchant:s3cret-pass').toString('base64')}`);
    expect(await service.stop('SIGTERM')).toBe(0);
  }, 40_000);

  it('refuses to start in production without SECRETS_KEY, naming it', async () => {
    service = startService('services/delivery-worker/src/main.ts', { NODE_ENV: 'production', DATABASE_URL: database.url }, { inheritEnv: false });
    expect(await service.exited()).toBe(1);
    expect(service.output()).toContain('SECRETS_KEY: is required when NODE_ENV=production');
  });
});
