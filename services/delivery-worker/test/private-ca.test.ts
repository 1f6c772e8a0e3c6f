import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startSelfSignedServer, startService, useMigratedDatabase, type SelfSignedServer, type ServiceProcess } from '@herald/testing';
import { useWorlds } from './support/world';

// A merchant endpoint behind a private CA: Node's NODE_EXTRA_CA_CERTS, set on the worker process,
// is what makes it trusted (docs/configuration.md). Real worker processes, on a database of their own.
const database = useMigratedDatabase('herald_worker_private_ca');
const world = useWorlds();

let dir: string;
let server: SelfSignedServer;
let worker: ServiceProcess | undefined;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'herald-ca-'));
  server = await startSelfSignedServer();
  await writeFile(path.join(dir, 'ca.pem'), server.cert);
});
afterEach(async () => {
  await worker?.stop('SIGTERM');
  worker = undefined;
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

describe('a callback to an endpoint whose certificate a private CA signed', () => {
  it.each([
    ['is refused without NODE_EXTRA_CA_CERTS', {}, 'failed'],
    ['is delivered with the CA in NODE_EXTRA_CA_CERTS', { caFile: true }, 'succeeded'],
  ])('%s', async (_case, { caFile }: { caFile?: boolean }, status) => {
    const w = world({ DELIVERY_ATTEMPTS: '1' }, database.url);
    const { programId } = await w.createTarget(`${server.origin}/hook`);
    const [sent] = await w.sendEvents(programId);
    worker = startService('services/delivery-worker/src/main.ts', {
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      METRICS_PORT: '0',
      QUEUE_PREFIX: w.config.queuePrefix,
      // The worker counts the attempts (its targets' policy default): one try, so a refusal fails at once.
      DELIVERY_ATTEMPTS: '1',
      ...(caFile ? { NODE_EXTRA_CA_CERTS: path.join(dir, 'ca.pem') } : {}),
    });
    const [delivery] = await w.settled([sent!.deliveryId]);
    expect(delivery!.status).toBe(status);
    if (status === 'failed') expect((await w.attempts(sent!.deliveryId))[0]).toMatchObject({ errorKind: 'tls' });
  });
});
