import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');

/** A service started as a real process (node with tsx's loader), with its output collected. */
export interface ServiceProcess {
  child: ChildProcess;
  /** The whole environment the process was started with. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the first log line (parsed JSON) whose message matches. */
  waitForLog(message: string | RegExp, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code once the process exits by itself (SIGKILL after the timeout). */
  exited(timeoutMs?: number): Promise<number | null>;
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

/** How startService builds the process's environment. */
export interface StartServiceOptions {
  /**
   * Whether the process also gets this process's environment (under `env`). Default true; false
   * starts it with `env` alone, so a Herald variable set in the shell cannot reach it.
   */
  inheritEnv?: boolean;
}

/** Starts `script` (a path from the repository root) with the given environment added. */
export function startService(script: string, env: Record<string, string>, options: StartServiceOptions = {}): ServiceProcess {
  const fullEnv = options.inheritEnv === false ? { ...env } : { ...process.env, ...env };
  // `node --import tsx`, not the tsx CLI: the CLI relays a signal to a child process and kills it
  // outright when it has not acknowledged within 30 ms, so a busy service could be killed instead
  // of shutting down gracefully. With the loader, signals reach the service itself.
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script)], {
    cwd: ROOT,
    env: fullEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));

  const waitForExit = async (timeoutMs: number): Promise<number | null> => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };

  const findLog = (message: string | RegExp): Record<string, unknown> | undefined => {
    for (const line of output.split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as Record<string, unknown>;
      const text = String(entry.message);
      if (typeof message === 'string' ? text === message : message.test(text)) return entry;
    }
    return undefined;
  };

  return {
    child,
    env: fullEnv,
    output: () => output,
    waitForLog: (message, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        const deadline = Date.now() + timeoutMs;
        const poll = (): void => {
          const entry = findLog(message);
          if (entry) return resolve(entry);
          if (child.exitCode !== null) return reject(new Error(`process exited (${child.exitCode}) before logging "${message}":\n${output}`));
          if (Date.now() > deadline) return reject(new Error(`no "${message}" log within ${timeoutMs} ms:\n${output}`));
          setTimeout(poll, 50);
        };
        poll();
      }),
    exited: (timeoutMs = 15_000) => waitForExit(timeoutMs),
    stop: (signal = 'SIGTERM', timeoutMs = 15_000) => {
      if (child.exitCode === null) child.kill(signal);
      return waitForExit(timeoutMs);
    },
  };
}
