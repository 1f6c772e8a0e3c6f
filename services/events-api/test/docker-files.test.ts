// The Docker files, read as text: Docker does not run on the build machines, so what can be checked
// without it is checked here (the image's default command, the compose file's health checks and
// the variables it requires) and scripts/docker-env.sh is run as a user runs it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadApiConfig, loadWorkerConfig } from '@herald/config';
import { runCommand } from '@herald/testing';
import { BUILD_ENTRIES } from '../../../scripts/bundles';

const ROOT = path.resolve(__dirname, '../../..');
const read = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');

/** The block of one service in docker-compose.yml: its lines up to the next service or top-level key. */
function composeService(name: string): string {
  const compose = read('docker-compose.yml');
  const start = compose.indexOf(`\n  ${name}:\n`);
  if (start < 0) throw new Error(`no service ${name} in docker-compose.yml`);
  const rest = compose.slice(start + 1);
  const end = rest.slice(1).search(/\n( {2}\S|\S)/);
  return end < 0 ? rest : rest.slice(0, end + 1);
}

let scratch: string;
beforeEach(() => {
  scratch = mkdtempSync(path.join(tmpdir(), 'herald-docker-env-'));
});
afterEach(() => rmSync(scratch, { recursive: true, force: true }));

describe('the Docker files', () => {
  it('give the image a default command: the events-api bundle with its production node options', () => {
    const commands = [...read('Dockerfile').matchAll(/^CMD (\[.*\])$/gm)].map((match) => JSON.parse(match[1]!) as string[]);
    expect(commands.at(-1)).toEqual(['node', ...BUILD_ENTRIES.api.node, BUILD_ENTRIES.api.bundle]);
  });

  it("give each long-running service a health check, the worker's on its METRICS_PORT", () => {
    for (const service of ['postgres', 'redis', 'events-api', 'delivery-worker']) expect(composeService(service)).toContain('\n    healthcheck:\n');
    const worker = composeService('delivery-worker');
    const port = /METRICS_PORT: "(\d+)"/.exec(worker)?.[1];
    expect(port).toBeDefined();
    expect(worker).toContain(`fetch('http://127.0.0.1:${port}/readyz')`);
  });

  it('list in .env.example every variable docker-compose.yml requires', () => {
    const required = [...read('docker-compose.yml').matchAll(/\$\{([A-Z_]+):\?/g)].map((match) => match[1]!);
    expect(required.length).toBeGreaterThan(0);
    const example = read('.env.example');
    for (const name of new Set(required)) expect(example).toMatch(new RegExp(`^${name}=$`, 'm'));
  });

  it('write with scripts/docker-env.sh a .env whose secrets production accepts, and never overwrite one', async () => {
    const target = path.join(scratch, '.env');
    const written = await runCommand('bash', ['scripts/docker-env.sh', target], {});
    expect(written).toMatchObject({ code: 0, stderr: '' });
    const env = Object.fromEntries(
      readFileSync(target, 'utf8')
        .split('\n')
        .filter((line) => /^[A-Z_]+=/.test(line))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    expect(Object.keys(env).sort()).toEqual(['ADMIN_TOKEN', 'DASHBOARD_PASSWORD', 'INGEST_TOKEN', 'SECRETS_KEY']);
    const production = { ...env, NODE_ENV: 'production' };
    expect(() => loadApiConfig(production)).not.toThrow();
    expect(() => loadWorkerConfig(production)).not.toThrow();

    writeFileSync(target, 'SECRETS_KEY=kept\n');
    const again = await runCommand('bash', ['scripts/docker-env.sh', target], {});
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('exists; left as it is');
    expect(readFileSync(target, 'utf8')).toBe('SECRETS_KEY=kept\n');
  });
});
