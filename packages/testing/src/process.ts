import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { DEFAULT_REDIS_URL, parseRedisUrl, redisKeyPrefix } from '@herald/config';
import { removeQueueKeys } from './queue-keys';
import { waitFor, WaitForTimeoutError } from './wait-for';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * What a process a test starts takes from this process's environment: what the system needs to run
 * programs, never a Herald setting. A list of what to keep, not of what to drop, so that no variable
 * set in the shell (REDIS_URL, ADMIN_TOKEN, NODE_ENV, a setting added later) can change a test.
 */
const SYSTEM_VARIABLES = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ', 'SYSTEMROOT'] as const;

/** The environment of a process a test starts: the system variables of this process, then `env`. */
export function testProcessEnv(env: Record<string, string>): Record<string, string> {
  const base: Record<string, string> = {};
  for (const name of SYSTEM_VARIABLES) {
    const value = process.env[name];
    if (value !== undefined) base[name] = value;
  }
  return { ...base, ...env };
}

/**
 * A process a test started (a Herald service, or any other command: a CLI, a bundle run by node),
 * with its output collected.
 */
export interface ServiceProcess {
  child: ChildProcess;
  /** The whole environment the process was started with. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Everything written to stdout and stderr so far, in the order it came. */
  output(): string;
  /** What was written to stdout so far. */
  stdout(): string;
  /** What was written to stderr so far. */
  stderr(): string;
  /** Resolves with the first log line (parsed JSON) whose message matches. */
  waitForLog(message: string | RegExp, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code once the process exits by itself (SIGKILL after the timeout). */
  exited(timeoutMs?: number): Promise<number | null>;
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

/** How startService and startCommand build the process's environment, and what they give it. */
export interface StartServiceOptions {
  /**
   * Whether the process also gets the system variables of this process (PATH, HOME, TMPDIR, LANG,
   * LC_ALL, TZ) under `env`. Default true; false starts it with `env` alone. No Herald variable of
   * this process reaches it either way: it runs on the settings in `env` and the defaults.
   */
  inheritEnv?: boolean;
  /**
   * For a bundle of the build: the node options to run it with, required (production's are
   * nodeOptionsOf in scripts/bundles.ts, which this package does not import; bench/worker-rss.ts
   * tries other V8 flags). Ignored for a TypeScript entry point.
   */
  nodeOptions?: readonly string[];
  /** Whether the process's stdin is a pipe the test writes to (`child.stdin`); default: no stdin. */
  stdin?: boolean;
}

/** The processes started in this test file and not yet cleaned up after (see cleanUpServices). */
const started: ServiceProcess[] = [];
const closed = new WeakMap<ChildProcess, Promise<void>>();

/**
 * Starts `script` (a path from the repository root: a TypeScript entry point, or a bundle of the
 * build) on the settings in `env`, and on a queue of its own when `env` names no QUEUE_PREFIX
 * (never the `herald` queue a system running on this machine uses). After the test file's last
 * test, cleanUpServices stops it if it still runs and removes the Redis keys of its queue.
 */
export function startService(script: string, env: Record<string, string>, options: StartServiceOptions = {}): ServiceProcess {
  const settings = { QUEUE_PREFIX: `service_${randomBytes(6).toString('hex')}`, ...env };
  // TypeScript with `node --import tsx`, not the tsx CLI: the CLI relays a signal to a child process
  // and kills it outright when it has not acknowledged within 30 ms, so a busy service could be
  // killed instead of shutting down gracefully. With the loader, signals reach the service itself.
  // A bundle of the production build (`pnpm build`) runs with the node options its caller gives,
  // production's as a rule: a bundle started without them would not be the process production runs.
  const file = path.join(ROOT, script);
  const typescript = /\.(m|c)?ts$/.test(script);
  if (!typescript && options.nodeOptions === undefined)
    throw new Error(`startService: give ${script} its nodeOptions (production's: nodeOptionsOf in scripts/bundles.ts)`);
  const args = typescript ? ['--import', 'tsx', file] : [...options.nodeOptions!, file];
  return startCommand(process.execPath, args, settings, options);
}

/**
 * Starts `command` with `args` from the repository root on the settings in `env` (and the system
 * variables, see StartServiceOptions.inheritEnv): for what is not a service of its own queue, a
 * CLI, a bundle run by node with options, `script` for a terminal. After the test file's last test,
 * cleanUpServices stops it if it still runs.
 */
export function startCommand(command: string, args: readonly string[], env: Record<string, string>, options: StartServiceOptions = {}): ServiceProcess {
  const fullEnv = options.inheritEnv === false ? env : testProcessEnv(env);
  const child = spawn(command, args, {
    cwd: ROOT,
    env: fullEnv,
    stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    // A command that cannot start (not found) never exits: it has no code, the reason is on its stderr.
    child.once('error', (error) => {
      stderr += `${error.message}\n`;
      output += `${error.message}\n`;
      resolve(null);
    });
  });
  // After the exit, once its stdout and stderr have been read to their end.
  closed.set(child, new Promise((resolve) => child.once('close', () => resolve())));
  child.stdout!.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    stdout += text;
    output += text;
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    stderr += text;
    output += text;
  });

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

  const service: ServiceProcess = {
    child,
    env: fullEnv,
    output: () => output,
    stdout: () => stdout,
    stderr: () => stderr,
    waitForLog: async (message, timeoutMs = 20_000) => {
      const read = (): Record<string, unknown> | undefined => {
        const entry = findLog(message);
        if (!entry && child.exitCode !== null) throw new Error(`process exited (${child.exitCode}) before logging "${message}":\n${output}`);
        return entry;
      };
      try {
        return (await waitFor(read, (entry) => entry !== undefined, timeoutMs, `a "${message}" log`, 50))!;
      } catch (error) {
        if (error instanceof WaitForTimeoutError) throw new Error(`no "${message}" log within ${timeoutMs} ms:\n${output}`);
        throw error;
      }
    },
    exited: (timeoutMs = 15_000) => waitForExit(timeoutMs),
    stop: (signal = 'SIGTERM', timeoutMs = 15_000) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return waitForExit(timeoutMs);
    },
  };
  started.push(service);
  return service;
}

/** A command run to its end. */
export interface CommandRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command` as startCommand starts it, writes `stdin` (when given) to it and closes it, and
 * resolves with its exit code and output once it has exited (SIGKILL after `timeoutMs`, default 60 s).
 */
export async function runCommand(
  command: string,
  args: readonly string[],
  env: Record<string, string>,
  options: { stdin?: string; timeoutMs?: number } = {},
): Promise<CommandRun> {
  const run = startCommand(command, args, env, { stdin: options.stdin !== undefined });
  run.child.stdin?.end(options.stdin);
  const code = await run.exited(options.timeoutMs ?? 60_000);
  if (code !== null || run.child.signalCode !== null) await closed.get(run.child);
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

/**
 * Stops every process this test file started that still runs (SIGTERM, as its own teardown would),
 * then removes the keys of the queues they ran on (QUEUE_PREFIX on REDIS_URL, or the default Redis), so that a test run leaves nothing in Redis. Runs after each test file (see
 * the Jest setup file teardown.ts).
 */
export async function cleanUpServices(): Promise<void> {
  const services = started.splice(0);
  await Promise.all(services.map((service) => service.stop('SIGTERM')));
  const queues = new Map(
    services
      .filter((service) => service.env.QUEUE_PREFIX !== undefined)
      .map((service) => {
        const redisUrl = service.env.REDIS_URL ?? DEFAULT_REDIS_URL;
        // The services' own key prefix: QUEUE_PREFIX, hash-tagged on a cluster.
        const prefix = redisKeyPrefix(service.env.QUEUE_PREFIX!, parseRedisUrl(redisUrl));
        return [`${redisUrl} ${prefix}`, { redisUrl, prefix }] as const;
      }),
  );
  for (const { redisUrl, prefix } of queues.values()) await removeQueueKeys(redisUrl, prefix);
}
