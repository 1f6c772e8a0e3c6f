import { startService, testDatabaseUrl, type ServiceProcess } from '@herald/testing';

describe('the delivery-worker process', () => {
  let service: ServiceProcess | undefined;
  afterEach(async () => {
    await service?.stop('SIGKILL');
    service = undefined;
  });

  it.each(['SIGTERM', 'SIGINT'] as const)('connects to PostgreSQL and Redis, then exits 0 on %s', async (signal) => {
    service = startService('services/delivery-worker/src/main.ts', {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: testDatabaseUrl(),
    });
    await service.waitForLog('delivery-worker ready');
    expect(await service.stop(signal)).toBe(0);
    expect(service.output()).toContain('"message":"stopped"');
  });
});
