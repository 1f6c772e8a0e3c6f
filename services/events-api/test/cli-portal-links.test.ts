// `herald portal-links create` as support runs it (node_modules/.bin/herald), against an
// events-api in its own process: the link it prints opens the portal, once.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { callJson, runCommand, startService, testDatabaseUrl, uniqueId, type ServiceProcess } from '@herald/testing';

const ROOT = path.resolve(__dirname, '../../..');
const HERALD = path.join(ROOT, 'node_modules/.bin/herald');
const ADMIN_TOKEN = randomBytes(24).toString('base64url');

let service: ServiceProcess;
let apiUrl: string;

beforeAll(async () => {
  service = startService('services/events-api/src/server.ts', {
    NODE_ENV: 'test',
    LOG_LEVEL: 'http',
    PORT: '0',
    DATABASE_URL: testDatabaseUrl(),
    QUEUE_PREFIX: uniqueId('cli_portal'),
    ADMIN_TOKEN,
  });
  apiUrl = `http://127.0.0.1:${String((await service.waitForLog('events-api listening')).port)}`;
});
afterAll(() => service.stop('SIGTERM'));

const herald = (args: string[]) => runCommand(HERALD, args, { HERALD_API_URL: apiUrl, ADMIN_TOKEN });
const admin = <T>(pathname: string, body: unknown) => callJson<T>('POST', `${apiUrl}/admin${pathname}`, { token: ADMIN_TOKEN, body });

/** POSTs a link's token as the portal's entry page does; answers the status. */
async function enter(url: string): Promise<number> {
  const token = new URL(url).searchParams.get('token')!;
  const res = await fetch(`${apiUrl}/portal/enter`, { method: 'POST', body: new URLSearchParams({ token }), redirect: 'manual' });
  return res.status;
}

describe('herald portal-links create', () => {
  it("prints a merchant's or a program's single-use portal link, as a record and as JSON", async () => {
    const program = await admin<{ id: string }>('/programs', { name: 'CLI portal program' });
    const merchant = await admin<{ id: string }>('/merchants', { programId: program.id, name: 'CLI portal shop' });

    const run = await herald(['portal-links', 'create', '--merchant', merchant.id]);
    expect(run.code).toBe(0);
    const url = /^url +(\S+)$/m.exec(run.stdout)![1]!;
    expect(url).toMatch(new RegExp(`^${apiUrl}/portal/enter\\?token=[A-Za-z0-9_-]{43}$`));
    expect(run.stdout).toMatch(/^expiresAt +\S+$/m);
    expect(await enter(url)).toBe(303);
    expect(await enter(url)).toBe(403);

    const json = await herald(['portal-links', 'create', '--json', '--program', program.id, '--expires-in', '120']);
    expect(json.code).toBe(0);
    const answer = JSON.parse(json.stdout) as { url: string; expiresAt: string };
    expect(Date.parse(answer.expiresAt) - Date.now()).toBeLessThanOrEqual(120_000);
    expect(await enter(answer.url)).toBe(303);

    // The request lines (LOG_LEVEL http) name the paths, never a link's token.
    for (const link of [url, answer.url]) expect(service.output()).not.toContain(new URL(link).searchParams.get('token')!);
    expect(service.output()).toContain('/portal/enter');
  });

  it('refuses a command line naming no owner or both, and prints the refusal of an unknown merchant', async () => {
    const none = await herald(['portal-links', 'create']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('needs --merchant <id> or --program <id>');
    const both = await herald(['portal-links', 'create', '--merchant', 'm', '--program', 'p']);
    expect(both.code).toBe(2);
    const bad = await herald(['portal-links', 'create', '--merchant', 'm', '--expires-in', 'soon']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--expires-in must be a whole number of seconds');

    const unknown = await herald(['portal-links', 'create', '--merchant', 'no-such-merchant']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('No merchant "no-such-merchant"');
    const tooLong = await herald(['portal-links', 'create', '--merchant', 'no-such-merchant', '--expires-in', '100000']);
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toContain('expiresInSeconds');
  });

  it('is in the usage', async () => {
    const run = await herald(['--help']);
    expect(run.stdout).toContain('\n  herald portal-links create --merchant <id> | --program <id>');
  });
});
