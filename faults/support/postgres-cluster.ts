import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { closedPort } from '@herald/testing';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** A PostgreSQL cluster of the test's own on 127.0.0.1 (trust auth), which the test may stop. */
export interface PrivateCluster {
  readonly port: number;
  /** The URL of database `name` on this cluster (user postgres). */
  url(name: string): string;
  stop(): void;
  start(): void;
  /** Stops it and removes its data directory. */
  remove(): void;
}

/**
 * initdb refuses to run as root, so when the suite runs as root the cluster belongs to the
 * `postgres` user and every command runs through runuser.
 */
function run(command: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(BIN, command), ...args]] : [path.join(BIN, command), args];
  execFileSync(file, argv, { stdio: 'pipe', timeout: 60_000 });
}

/** `settings`: server settings of the cluster (`-c name=value` at every start), e.g. a small lock table. */
export async function startPrivateCluster(settings: Record<string, string> = {}): Promise<PrivateCluster> {
  const port = await closedPort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'herald-faults-pg-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const data = path.join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const start = (): void =>
    run('pg_ctl', [
      '-D',
      data,
      '-l',
      path.join(dir, 'log'),
      '-w',
      '-t',
      '30',
      '-o',
      [`-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)].join(' '),
      'start',
    ]);
  const stop = (): void => run('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']);
  start();
  return {
    port,
    url: (name) => `postgresql://postgres@127.0.0.1:${port}/${name}`,
    stop,
    start,
    remove: () => {
      try {
        stop();
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
