// The production build (`pnpm build`) as production runs it: the migrate bundle migrates a new
// database, the events-api and delivery-worker bundles start with plain node (no TypeScript
// compiled in the process) and get a callback delivered, and the CLI bundle runs.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { dropDatabase } from '@herald/db';
import {
  databaseUrlFor,
  runCommand,
  startHttpRecorder,
  startService,
  uniqueId,
  waitFor,
  type CommandRun,
  type HttpRecorder,
  type ServiceProcess,
} from '@herald/testing';
import rootPackage from '../../../package.json';
import { buildAll } from '../../../scripts/build';
import { BUILD_ENTRIES } from '../../../scripts/bundles';

const ROOT = path.resolve(__dirname, '../../..');
const ADMIN_TOKEN = randomBytes(24).toString('base64url');
const INGEST_TOKEN = randomBytes(24).toString('base64url');
const DASHBOARD_PASSWORD = randomBytes(12).toString('hex');
const databaseUrl = databaseUrlFor(uniqueId('herald_build').toLowerCase());

/** Runs `command` (a bundle, or node with options and a bundle) from the repository root with only `env` and the system's variables. */
const run = (command: string, args: string[], env: Record<string, string>): Promise<CommandRun> => runCommand(command, args, env);

let api: ServiceProcess;
let worker: ServiceProcess;
let merchant: HttpRecorder;
let apiUrl: string;

beforeAll(async () => {
  // The same build as `pnpm build` (about a second; a file whose content is unchanged is left alone).
  await buildAll();
  // The migrations folder is found from the bundle: this database did not exist.
  const migrated = await run(process.execPath, [BUILD_ENTRIES.migrate.bundle], { DATABASE_URL: databaseUrl });
  expect(migrated).toMatchObject({ code: 0, stderr: '' });
  expect(migrated.stdout).toMatch(/^created database herald_build_/);
  expect(migrated.stdout).toMatch(/applied \d{14}_init\n/);

  const shared = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATABASE_URL: databaseUrl,
    QUEUE_PREFIX: uniqueId('build'),
    ALLOW_PRIVATE_TARGETS: 'true',
    // On SIGUSR2 each process prints the files it has loaded.
    NODE_OPTIONS: `--require ${path.join(ROOT, 'packages/testing/src/loaded-modules-hook.cjs')}`,
  };
  api = startService(
    BUILD_ENTRIES.api.bundle,
    { ...shared, PORT: '0', ADMIN_TOKEN, INGEST_TOKEN, DASHBOARD_PASSWORD },
    { nodeOptions: BUILD_ENTRIES.api.node },
  );
  worker = startService(BUILD_ENTRIES.worker.bundle, { ...shared, METRICS_PORT: '0' }, { nodeOptions: BUILD_ENTRIES.worker.node });
  merchant = await startHttpRecorder();
  apiUrl = `http://127.0.0.1:${String((await api.waitForLog('events-api listening', 30_000)).port)}`;
  await worker.waitForLog('delivery-worker ready', 30_000);
}, 60_000);

afterAll(async () => {
  await Promise.all([api?.stop('SIGTERM'), worker?.stop('SIGTERM'), merchant?.close()]);
  await dropDatabase(databaseUrl);
});

describe('the production build', () => {
  it('runs each service with plain node (no TypeScript loader), with source maps that name the TypeScript sources', () => {
    for (const [service, { node, bundle }] of [
      [api, BUILD_ENTRIES.api],
      [worker, BUILD_ENTRIES.worker],
    ] as const) {
      expect(service.child.spawnargs.slice(1)).toEqual([...node, path.join(ROOT, bundle)]);
      expect(node).toContain('--enable-source-maps');
    }
    for (const { bundle, source } of Object.values(BUILD_ENTRIES)) {
      const code = readFileSync(path.join(ROOT, bundle), 'utf8');
      expect(code).not.toMatch(/require\("tsx|\.ts"\)/);
      const map = JSON.parse(readFileSync(path.join(ROOT, `${bundle}.map`), 'utf8')) as { sources: string[] };
      expect(map.sources.map((file) => path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, bundle)), file)))).toContain(source);
    }
  });

  it('starts each bundle in docker-compose.yml and `pnpm start:prod` with the node options of scripts/bundles.ts', () => {
    const compose = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    const composeCommands = [...compose.matchAll(/^\s*command: (\["node".*\])$/gm)].map((match) => (JSON.parse(match[1]!) as string[]).slice(1).join(' '));
    const startCommands = [...readFileSync(path.join(ROOT, 'scripts/start.sh'), 'utf8').matchAll(/^\s*\w+="node ([^"$]+\/dist\/[^"$]+\.js)"$/gm)].map(
      (match) => match[1]!,
    );
    const started = [BUILD_ENTRIES.migrate, BUILD_ENTRIES.api, BUILD_ENTRIES.worker].map(({ bundle, node }) => [...node, bundle].join(' '));
    expect(composeCommands).toEqual(started);
    expect(startCommands).toEqual(started);
  });

  it('loads neither the Prisma client nor its driver adapter in the services: their statements run on plain pg pools', async () => {
    for (const service of [api, worker]) {
      service.child.kill('SIGUSR2');
      const { modules } = (await service.waitForLog('loaded modules')) as unknown as { modules: string[] };
      expect(modules.some((file) => file.includes('/node_modules/pg/'))).toBe(true);
      expect(modules.filter((file) => /@prisma|generated\/prisma/.test(file))).toEqual([]);
    }
  });

  it('leaves ajv and the JSON Schema validators out of the delivery-worker, which validates no input with them', async () => {
    worker.child.kill('SIGUSR2');
    const { modules } = (await worker.waitForLog('loaded modules')) as unknown as { modules: string[] };
    expect(modules.some((file) => file.includes('/node_modules/bullmq/'))).toBe(true);
    expect(modules.filter((file) => /\/node_modules\/ajv\//.test(file))).toEqual([]);
    // The events-api's bundle keeps them: it validates every request body with them.
    expect(readFileSync(path.join(ROOT, BUILD_ENTRIES.api.bundle), 'utf8')).toContain('node_modules/ajv/dist/2020.js');
  });

  it("keeps the root package.json out of the bundles but for its version, the User-Agent's", () => {
    // Its scripts and development dependencies are no business of a production process.
    for (const { bundle } of Object.values(BUILD_ENTRIES)) {
      const code = readFileSync(path.join(ROOT, bundle), 'utf8');
      expect(code).not.toContain('devDependencies');
      expect(code).not.toContain('test:faults');
    }
  });

  it('requires each package outside the bundles through a workspace package that lists it as a production dependency', () => {
    // The Docker image installs production dependencies only: a bundle requiring a development
    // dependency would start here and fail there.
    let checked = 0;
    for (const { bundle } of Object.values(BUILD_ENTRIES)) {
      const bundleDir = path.dirname(path.join(ROOT, bundle));
      const code = readFileSync(path.join(ROOT, bundle), 'utf8');
      const required = [...code.matchAll(/(?:require|require\.resolve|import)\("(\.[^"]*\/node_modules\/[^"]+)"\)/g)].map((match) =>
        path.resolve(bundleDir, match[1]!),
      );
      for (const file of required) {
        checked += 1;
        const [owner, rest] = file.split('/node_modules/') as [string, string];
        const name = rest.startsWith('@') ? rest.split('/').slice(0, 2).join('/') : rest.split('/')[0]!;
        const manifest = JSON.parse(readFileSync(path.join(owner, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
        expect({ bundle, owner: path.relative(ROOT, owner), name, listed: name in (manifest.dependencies ?? {}) }).toEqual({
          bundle,
          owner: path.relative(ROOT, owner),
          name,
          listed: true,
        });
      }
    }
    // The services' bundles require dozens (express, bullmq, pg, ...); the CLI needs none.
    expect(checked).toBeGreaterThan(20);
  });

  it('answers /healthz and /readyz, and serves the API reference and the dashboard with their assets', async () => {
    expect(await (await fetch(`${apiUrl}/healthz`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`${apiUrl}/readyz`)).status).toBe(200);
    // Swagger UI's files come from swagger-ui-dist, found from the bundle.
    const swagger = await fetch(`${apiUrl}/docs/swagger-ui-bundle.js`);
    expect(swagger.status).toBe(200);
    expect((await swagger.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
    // bull-board renders its page from its own views and serves its own static files.
    const authorization = `Basic ${Buffer.from(`admin:${DASHBOARD_PASSWORD}`).toString('base64')}`;
    const page = await fetch(`${apiUrl}/admin/queues/`, { headers: { authorization } });
    expect(page.status).toBe(200);
    const stylesheet = /href="([^"]*static\/css\/[^"]+\.css)"/.exec(await page.text())?.[1];
    expect(stylesheet).toBeDefined();
    const css = await fetch(new URL(stylesheet!, `${apiUrl}/admin/queues/`), { headers: { authorization } });
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
  });

  it('delivers a callback to a merchant: program and target set up with the CLI bundle, event ingested', async () => {
    const cli = (args: string[]): Promise<CommandRun> =>
      run(path.join(ROOT, BUILD_ENTRIES.cli.bundle), [...args, '--json'], { HERALD_API_URL: apiUrl, ADMIN_TOKEN });
    const program = await cli(['programs', 'create', '--name', 'Build program']);
    expect(program).toMatchObject({ code: 0, stderr: '' });
    const programId = (JSON.parse(program.stdout) as { id: string }).id;
    expect(await cli(['targets', 'set', '--program', programId, '--url', `${merchant.origin}/hooks`, '--auth', 'none'])).toMatchObject({ code: 0, stderr: '' });

    const eventId = `Event-${randomUUID()}`;
    const ingested = await fetch(`${apiUrl}/internal/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: eventId, programId, origin: 'api', eventType: 'created', objectId: 'pay-1', objectType: 'payment' }),
    });
    expect(ingested.status).toBe(201);

    await waitFor(
      () => merchant.requests.length,
      (n) => n > 0,
      20_000,
      'the callback at the merchant',
    );
    expect(merchant.requests).toHaveLength(1);
    expect(merchant.requests[0]).toMatchObject({ method: 'POST', url: '/hooks' });
    expect(merchant.requests[0]!.headers['user-agent']).toBe(`Herald/${rootPackage.version}`);
    expect(JSON.parse(merchant.requests[0]!.body)).toMatchObject({ id: eventId, eventType: 'created', objectId: 'pay-1' });
  }, 40_000);

  it('runs the CLI bundle as a command: --help prints the usage and exits 0', async () => {
    const help = await run(path.join(ROOT, BUILD_ENTRIES.cli.bundle), ['--help'], {});
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^Usage:\n {2}herald programs create/);
    expect(help.stdout).toContain('herald deliveries');
  });
});
