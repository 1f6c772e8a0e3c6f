import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Starts `redis-server` with `args` and resolves once it accepts connections on `port`; fails with
 * its output if it exits first or is not ready within 10 s. Not a Herald service (startService):
 * the private Redis servers and clusters of the tests and faults, which a test may kill at will.
 */
export async function spawnRedisServer(port: number, args: readonly string[]): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`redis-server did not start on ${port}:\n${output}`)), 10_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited (${code}):\n${output}`));
    });
  });
  return child;
}

/** Sends `signal` (SIGKILL by default) to a process that still runs, and resolves once it has exited. */
export async function killProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}
