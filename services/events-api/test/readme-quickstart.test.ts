// The README's quickstart "by hand", run as pasted into a terminal (against this test's events-api
// instead of port 3000, and a free port instead of 4000): it must work beside `pnpm demo`'s tenants
// and on a second run, and leave no target pointing at the endpoint it stops.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { callJson, closedPort, runCommand, startService, useMigratedDatabase, type ServiceProcess } from '@herald/testing';

const ROOT = path.resolve(__dirname, '../../..');
const database = useMigratedDatabase('herald_quickstart');

let api: ServiceProcess;
let origin: string;
beforeAll(async () => {
  api = startService('services/events-api/src/server.ts', { NODE_ENV: 'test', LOG_LEVEL: 'info', PORT: '0', DATABASE_URL: database.url });
  origin = `http://127.0.0.1:${String((await api.waitForLog('events-api listening')).port)}`;
});
afterAll(() => api.stop('SIGTERM'));

/** The quickstart's shell block, pointed at this test's events-api and a free port for the endpoint. */
async function quickstart(): Promise<string> {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = /```sh\n(# 1\. A merchant endpoint[\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error('no quickstart block in README.md');
  const port = String(await closedPort());
  return block.replaceAll('localhost:3000', origin.replace('http://', '')).replaceAll('4000', port);
}

const admin = (pathname: string) =>
  callJson<{ count: number; data: Array<Record<string, unknown>> }>('GET', `${origin}/admin${pathname}`, { token: 'dev-admin-token' });

describe("the README's quickstart", () => {
  it("runs beside pnpm demo's program, twice, and removes the target it made before stopping the endpoint", async () => {
    // What `pnpm demo` leaves behind: its program, with the id it always uses.
    await callJson('POST', `${origin}/admin/programs`, { token: 'dev-admin-token', body: { id: 'demo', name: 'Demo program' }, expect: [201] });
    const script = await quickstart();
    for (const run of [1, 2]) {
      const result = await runCommand('bash', ['-c', script], {}, { timeoutMs: 30_000 });
      expect({ run, code: result.code, stderr: result.stderr }).toEqual({ run, code: 0, stderr: '' });
      expect(result.stdout).not.toMatch(/"status":\s*4\d\d/);
      expect(result.stdout).toMatch(/"count":1/);
      // The merchant's own delivery history and target health (step 6).
      expect(result.stdout).toMatch(/"pageSize":20,"count":0,"totalPages":0,"data":\[\]/);
      expect(result.stdout).toMatch(/"url":"http:\/\/127\.0\.0\.1:\d+\/hooks","authMode":"none"/);
      // The merchant's recovery (step 7): started and followed by its id.
      expect(result.stdout).toMatch(/"id":"[0-9a-f-]{36}","status":"(running|finished)"[^}]*"queued":\d+/);
      expect(result.stdout).toContain('target removed: HTTP 204');
    }
    expect((await admin('/programs?pageSize=100')).count).toBe(3);
    // No target left to retry against the stopped endpoint.
    expect((await admin('/notification-targets')).data).toEqual([]);
  });
});
