import { randomBytes } from 'node:crypto';
import { acceptsConnections, holdPort, startService, testDatabaseUrl, type ServiceProcess } from '@herald/testing';

// 127.0.0.2 is a loopback address on Linux that a listener bound to 127.0.0.1 does not answer on,
// while one bound to every interface does: it stands in for "another machine's view" without a network.
const OTHER_ADDRESS = '127.0.0.2';

function startApi(env: Record<string, string>): ServiceProcess {
  return startService('services/events-api/src/server.ts', { LOG_LEVEL: 'info', PORT: '0', DATABASE_URL: testDatabaseUrl(), ...env }, { inheritEnv: false });
}

function productionEnv(): Record<string, string> {
  return {
    NODE_ENV: 'production',
    REDIS_URL: 'redis://127.0.0.1:6379',
    SECRETS_KEY: randomBytes(32).toString('hex'),
    ADMIN_TOKEN: randomBytes(24).toString('hex'),
    INGEST_TOKEN: randomBytes(24).toString('hex'),
    DASHBOARD_PASSWORD: randomBytes(12).toString('hex'),
  };
}

describe('where the events-api listens', () => {
  it('binds 127.0.0.1 in development, where the public development tokens work, and its banner says so', async () => {
    const service = startApi({ NODE_ENV: 'development' });
    const { port } = (await service.waitForLog('events-api listening')) as { port: number };
    expect(await acceptsConnections('127.0.0.1', port)).toBe(true);
    expect(await acceptsConnections(OTHER_ADDRESS, port)).toBe(false);
    expect(service.stdout()).toContain(`Listening on    127.0.0.1 port ${port} (HOST; only this machine can connect)`);
    expect(await service.stop('SIGTERM')).toBe(0);
  });

  it('binds what HOST says in production', async () => {
    const service = startApi({ ...productionEnv(), HOST: OTHER_ADDRESS });
    const { port, host } = (await service.waitForLog('events-api listening')) as { port: number; host: string };
    expect(host).toBe(OTHER_ADDRESS);
    expect(await acceptsConnections(OTHER_ADDRESS, port)).toBe(true);
    expect(await acceptsConnections('127.0.0.1', port)).toBe(false);
    expect(await service.stop('SIGTERM')).toBe(0);
  });

  it('binds every interface in production when HOST is unset (a container publishes its port)', async () => {
    const service = startApi(productionEnv());
    const { port } = (await service.waitForLog('events-api listening')) as { port: number };
    expect(await acceptsConnections(OTHER_ADDRESS, port)).toBe(true);
    expect(await service.stop('SIGTERM')).toBe(0);
  });

  it('stops on a taken port with a message naming PORT and what to set it to', async () => {
    const held = await holdPort('127.0.0.1');
    try {
      const service = startApi({ NODE_ENV: 'development', PORT: String(held.port) });
      expect(await service.exited()).toBe(1);
      expect(service.output()).toContain(`cannot listen on 127.0.0.1 port ${held.port}: the port is in use by another process. Set PORT to a free port`);
    } finally {
      await held.release();
    }
  });

  it('stops on a HOST that is not an address of this machine, naming HOST', async () => {
    // 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of a real machine.
    const service = startApi({ NODE_ENV: 'development', HOST: '192.0.2.1' });
    expect(await service.exited()).toBe(1);
    expect(service.output()).toContain('HOST is not an address of this machine. Set HOST to one of its addresses');
  });
});
