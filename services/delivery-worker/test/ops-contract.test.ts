import { describeOpsContract } from '@herald/testing';
import { startMonitoringServer } from '../src/monitoring-server';

describeOpsContract("the delivery-worker's monitoring listener", async (options) => {
  const server = await startMonitoringServer({ ...options, port: 0, host: '127.0.0.1' });
  return { origin: `http://127.0.0.1:${server.port}`, close: () => server.close() };
});
