import { closedPort, startService, testDatabaseUrl, type ServiceProcess } from '@herald/testing';

describe('the events-api process', () => {
  let service: ServiceProcess | undefined;
  afterEach(async () => {
    await service?.stop('SIGKILL');
    service = undefined;
  });

  it('starts, answers /readyz with 200, and exits 0 on SIGTERM', async () => {
    service = startService('services/events-api/src/server.ts', {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      PORT: '0',
      DATABASE_URL: testDatabaseUrl(),
    });
    const listening = await service.waitForLog('events-api listening');
    const res = await fetch(`http://127.0.0.1:${String(listening.port)}/readyz`);
    expect(res.status).toBe(200);

    expect(await service.stop('SIGTERM')).toBe(0);
    expect(service.output()).toContain('"message":"stopped"');
  });

  it('refuses to start with a bad variable and names it', async () => {
    service = startService('services/events-api/src/server.ts', { PORT: 'eighty' });
    expect(await service.exited()).toBe(1);
    expect(service.output()).toContain('PORT: must be a whole number');
  });

  it('starts while PostgreSQL is down and reports it on /readyz instead of crashing', async () => {
    const port = await closedPort();
    service = startService('services/events-api/src/server.ts', {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      PORT: '0',
      DATABASE_URL: `postgresql://postgres@127.0.0.1:${port}/herald`,
    });
    const listening = await service.waitForLog('events-api listening');
    const res = await fetch(`http://127.0.0.1:${String(listening.port)}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ down: ['postgres'] });
    expect(await service.stop('SIGTERM')).toBe(0);
  });
});
