import { acceptsConnections, holdPort, startService, useMigratedDatabase, type ServiceProcess } from '@herald/testing';

// Worker processes on a database of their own: their sweepers must not find other files' deliveries.
const database = useMigratedDatabase('herald_worker_listen');

// The default METRICS_PORT: a second worker beside `pnpm start` finds it taken.
const DEFAULT_METRICS_PORT = 9464;

function startWorker(env: Record<string, string>): ServiceProcess {
  return startService('services/delivery-worker/src/main.ts', { LOG_LEVEL: 'info', DATABASE_URL: database.url, ...env }, { inheritEnv: false });
}

describe("the delivery-worker's monitoring listener", () => {
  it('moves on to the next free port in development when the default METRICS_PORT is taken, so a second worker starts', async () => {
    // Taken by this test, or already by a worker running on this machine: taken either way.
    const held = await holdPort('127.0.0.1', DEFAULT_METRICS_PORT);
    try {
      const worker = startWorker({ NODE_ENV: 'development' });
      const { port, host } = (await worker.waitForLog('metrics listening')) as { port: number; host: string };
      await worker.waitForLog('delivery-worker ready');
      expect(host).toBe('127.0.0.1');
      expect(port).toBeGreaterThan(DEFAULT_METRICS_PORT);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      // Development's listener is for this machine only.
      expect(await acceptsConnections('127.0.0.2', port)).toBe(false);
      expect(await worker.stop('SIGTERM')).toBe(0);
    } finally {
      await held.release();
    }
  });

  it.each(['development', 'production'])(
    'keeps a METRICS_PORT that was asked for (NODE_ENV=%s) and stops naming METRICS_PORT when it is taken',
    async (nodeEnv) => {
      const held = await holdPort('127.0.0.1');
      try {
        const production = { SECRETS_KEY: 'ab'.repeat(8) + 'cd'.repeat(8) + '0123456789abcdef'.repeat(2), HOST: '127.0.0.1' };
        const worker = startWorker({ NODE_ENV: nodeEnv, METRICS_PORT: String(held.port), ...(nodeEnv === 'production' ? production : {}) });
        expect(await worker.exited()).toBe(1);
        expect(worker.output()).toContain(
          `cannot listen on 127.0.0.1 port ${held.port}: the port is in use by another process. Set METRICS_PORT to a free port (0 takes any free port)`,
        );
        expect(worker.output()).not.toContain('delivery-worker ready');
      } finally {
        await held.release();
      }
    },
  );
});
