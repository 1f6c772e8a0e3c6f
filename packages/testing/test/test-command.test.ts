// `pnpm test` on a fresh machine: the one command installs what the tests need, and a missing
// Chromium stops the run with a message saying how to get it, never a silent skip.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCommand } from '../src';
import rootPackage from '../../../package.json';

const ROOT = path.resolve(__dirname, '../../..');

let emptyBin: string;
beforeEach(() => {
  emptyBin = mkdtempSync(path.join(tmpdir(), 'herald-no-apt-'));
});
afterEach(() => rmSync(emptyBin, { recursive: true, force: true }));

describe('the test command', () => {
  it('installs the dependencies and checks for Chromium before Jest runs', () => {
    expect(rootPackage.scripts.test).toBe('bash scripts/test.sh');
    const steps = readFileSync(path.join(ROOT, 'scripts/test.sh'), 'utf8')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#') && !line.startsWith('set ') && !line.startsWith('cd '));
    expect(steps).toEqual(['pnpm install --frozen-lockfile --reporter=silent', 'bash scripts/ensure-chromium.sh', 'exec node_modules/.bin/jest "$@"']);
  });

  it('goes on when Chromium is there', async () => {
    const present = await runCommand('/bin/bash', ['scripts/ensure-chromium.sh', process.execPath], {});
    expect(present).toMatchObject({ code: 0, stdout: '', stderr: '' });
  });

  it('stops with a message saying how to install Chromium when it is missing and cannot be installed', async () => {
    // No apt-get on this PATH: the case of a machine where the tests cannot install it themselves.
    const missing = path.join(emptyBin, 'chromium');
    const run = await runCommand('/bin/bash', ['scripts/ensure-chromium.sh', missing], { PATH: emptyBin });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`test: the browser tests need Chromium at ${missing}, and it is missing.`);
    expect(run.stderr).toContain('sudo apt-get update && sudo apt-get install -y chromium');
  });
});
