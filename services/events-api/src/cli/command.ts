import type { AdminResponse } from './admin-client';
import { HeraldError } from '@herald/domain/herald-error';

/** The command line is wrong; the message says how, and the usage follows it. */
export class UsageError extends HeraldError {
  override readonly name = 'UsageError';
  readonly code = 'usage';
}

/** What a command needs from its process, so tests can run it in memory. */
export interface CliIo {
  /** All of standard input, or undefined when it is a terminal (nothing piped in). */
  readStdin(): Promise<string | undefined>;
  stdout(text: string): void;
  stderr(text: string): void;
}

/**
 * Prints an answer of the admin API as JSON and returns the exit code: 0 for a 2xx (`printed`, or
 * the body, on stdout), 1 for anything else (the problem on stderr; redirects are not followed).
 */
export function printAnswer(io: CliIo, response: AdminResponse, printed: unknown = response.body): number {
  if (response.status < 200 || response.status >= 300) {
    io.stderr(`${JSON.stringify(response.body ?? { status: response.status }, null, 2)}\n`);
    return 1;
  }
  io.stdout(`${JSON.stringify(printed, null, 2)}\n`);
  return 0;
}

/** Node's parseArgs error, cut to its first sentence, which names the option (never its value). */
export function usageErrorOf(error: unknown): UsageError {
  return new UsageError((error as Error).message.split(/(?<=\.) /)[0]!);
}
