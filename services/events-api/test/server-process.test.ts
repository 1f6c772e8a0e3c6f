import { randomBytes } from 'node:crypto';
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

  it('starts in production with its own secrets and no delivery-worker setting', async () => {
    const adminToken = randomBytes(24).toString('hex');
    // This environment and nothing else: no worker setting set in the shell can reach the process.
    service = startService(
      'services/events-api/src/server.ts',
      {
        NODE_ENV: 'production',
        PORT: '0',
        DATABASE_URL: testDatabaseUrl(),
        REDIS_URL: 'redis://127.0.0.1:6379',
        SECRETS_KEY: randomBytes(32).toString('hex'),
        ADMIN_TOKEN: adminToken,
        INGEST_TOKEN: randomBytes(24).toString('hex'),
        DASHBOARD_PASSWORD: randomBytes(12).toString('hex'),
      },
      { inheritEnv: false },
    );
    const listening = await service.waitForLog('events-api listening');
    const origin = `http://127.0.0.1:${String(listening.port)}`;
    expect((await fetch(`${origin}/readyz`)).status).toBe(200);
    const created = await fetch(`${origin}/admin/programs`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Production program' }),
    });
    expect(created.status).toBe(201);
    expect((await fetch(`${origin}/admin/programs`, { method: 'POST', headers: { Authorization: 'Bearer dev-admin-token' } })).status).toBe(401);
    expect(await service.stop('SIGTERM')).toBe(0);
  });

  it('refuses to start in production without its admin token, naming it', async () => {
    const env = { NODE_ENV: 'production', PORT: '0', SECRETS_KEY: randomBytes(32).toString('hex') };
    service = startService('services/events-api/src/server.ts', env, { inheritEnv: false });
    expect(await service.exited()).toBe(1);
    expect(service.output()).toContain('ADMIN_TOKEN: is required when NODE_ENV=production');
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
