import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { closedPort, killProcess, spawnRedisServer } from '@herald/testing';

/** A redis-server of the test's own on 127.0.0.1, which the test may kill and restart. */
export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** Kills the server (SIGKILL by default) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port (and directory, so an append-only file is read back). */
  start(): Promise<void>;
  /** Kills it and removes its directory. */
  remove(): Promise<void>;
}

/** Starts a redis-server on a free port; `persistent` turns on the append-only file (fsync always). */
export async function startPrivateRedis(options: { persistent?: boolean } = {}): Promise<PrivateRedis> {
  const port = await closedPort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'herald-faults-redis-'));
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--daemonize', 'no'];
    args.push(...(options.persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']));
    child = await spawnRedisServer(port, args);
  };

  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    if (child) await killProcess(child, signal);
  };

  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill,
    start,
    remove: async () => {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
