import { applyMigrations } from '@herald/db';
import { always, createScratchDatabase } from '@herald/testing';
import { report } from './support/report';
import { useHttpRecorders, useWorlds } from './support/world';

// Scenario 8 (partial): callbacks to a Basic-auth target, half of them failing and retried; then
// the worker's logs (down to debug), every job in Redis (data, return values, failure reasons,
// stack traces) and the attempt log in PostgreSQL are searched for the password and its
// Authorization header. Not yet covered: the events-api's logs and responses, the dashboard's JSON.

/** JSON of rows that may hold BigInt columns. */
const json = (value: unknown): string => JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));

const SECRET = 'faults-S3cret-P4ssw0rd-9f8e7d';
const CALLBACKS = 100;

let database: { url: string; drop: () => Promise<void> };
beforeAll(async () => {
  database = await createScratchDatabase('herald_faults_secrets');
  await applyMigrations(database.url);
});
afterAll(() => database.drop());

const world = useWorlds();
const startReceiver = useHttpRecorders();

it('leaves no credential in worker logs, Redis job data or the attempt log', async () => {
  const w = world({ DELIVERY_ATTEMPTS: '3', DELIVERY_BACKOFF_MS: '10' }, database.url);
  // Every other request is refused with a 401, so failed attempts and retries get logged.
  const receiver = await startReceiver((_request, index) => (index % 2 === 0 ? { status: 401, body: { error: 'unauthorized' } } : { status: 200 }));
  const { programId } = await w.createTarget(`${receiver.origin}/hook`, { mode: 'basic', username: 'shop', password: SECRET });
  const sent = await w.sendEvents(programId, CALLBACKS);
  w.startWorker();
  const rows = await w.settled(sent.map((s) => s.deliveryId), ['succeeded', 'failed'], 60_000);

  const basic = Buffer.from(`shop:${SECRET}`).toString('base64');
  const needles = [SECRET, basic];
  const jobs = await w.queue.getJobs(['completed', 'failed', 'delayed', 'waiting', 'active']);
  const places: Record<string, string> = {
    'worker logs': w.logs(),
    'Redis job data': JSON.stringify(jobs.map((job) => job.asJSON())),
    'attempt log (PostgreSQL)': json(await w.prisma.deliveryAttempt.findMany({ where: { deliveryId: { in: sent.map((s) => s.deliveryId) } } })),
    'deliveries (PostgreSQL)': json(rows),
  };
  const found = Object.entries(places).filter(([, text]) => needles.some((needle) => text.includes(needle))).map(([place]) => place);
  // The merchant itself must of course receive the credential, or the test proves nothing.
  const sentToMerchant = receiver.requests.filter((request) => request.headers.authorization === `Basic ${basic}`).length;

  report('8. secrets (partial)', `${CALLBACKS} Basic-auth callbacks, every other answer a 401; searched ${Object.keys(places).join(', ')} for the password and its Base64 header`, {
    'callback requests tried': receiver.requests.length,
    'requests carrying the credential to the merchant': sentToMerchant,
    delivered: rows.filter((row) => row.status === 'succeeded').length,
    'bytes searched': Object.values(places).reduce((n, text) => n + text.length, 0),
    'places where a credential was found': found.length ? found : 'none',
  });
  expect(sentToMerchant).toBeGreaterThan(0);
  expect(found).toEqual([]);
});
