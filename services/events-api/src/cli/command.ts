import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { AdminResponse } from './admin-client';
import { HeraldError } from '@herald/domain/herald-error';
import { problem } from './output';

/** The command line is wrong; the message says how, and the usage follows it. */
export class UsageError extends HeraldError {
  override readonly name = 'UsageError';
  readonly code = 'usage';
}

/** What a command needs from its process, so tests can run it in memory. */
export interface CliIo {
  /** All of standard input, or undefined when it is a terminal (nothing piped in). */
  readStdin(): Promise<string | undefined>;
  /** Asks on the terminal for a secret without echoing it; undefined when there is no terminal. */
  promptSecret(prompt: string): Promise<string | undefined>;
  stdout(text: string): void;
  stderr(text: string): void;
}

/** The options a command declares, as node:util parseArgs takes them. */
type ParseArgsOptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** Options every command takes. */
export const COMMON_OPTIONS = { json: { type: 'boolean' } } as const satisfies ParseArgsOptionsConfig;

/** Options of every list. */
export const PAGING_OPTIONS = { page: { type: 'string' }, 'page-size': { type: 'string' } } as const satisfies ParseArgsOptionsConfig;

/** The values of `options` as parsed: a boolean for a flag, a string otherwise (no option is `multiple`). */
export type OptionValues<O extends ParseArgsOptionsConfig> = { [K in keyof O]?: O[K]['type'] extends 'boolean' ? boolean : string };

/**
 * `argv` as `<group> <action> [operands…]` with `options`; refuses another group or action, and an
 * unknown option (naming the option, never its value).
 */
export function parseCommandLine<const O extends ParseArgsOptionsConfig, const A extends string>(
  argv: readonly string[],
  options: O,
  group: string,
  actions: readonly A[],
): { action: A; operands: string[]; values: OptionValues<O> } {
  let parsed: { values: unknown; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (error) {
    throw usageErrorOf(error);
  }
  const [given, action, ...operands] = parsed.positionals;
  if (given !== group || !actions.includes(action as A)) {
    throw new UsageError(`expected ${actions.map((a) => `"${group} ${a}"`).join(', ')}, got "${parsed.positionals.join(' ')}"`);
  }
  return { action: action as A, operands, values: parsed.values as OptionValues<O> };
}

/** How an answer is shown: the API's JSON (--json), or `human` for people. */
export interface Presentation {
  json: boolean;
  human: (body: unknown) => string;
}

/**
 * Prints an answer of the admin API and returns the exit code: 0 for a 2xx (`printed`, or the
 * body, on stdout), 1 for anything else (the problem on stderr; redirects are not followed).
 */
export function printAnswer(io: CliIo, response: AdminResponse, show: Presentation, printed: unknown = response.body): number {
  if (response.status < 200 || response.status >= 300) {
    io.stderr(show.json ? `${JSON.stringify(response.body ?? { status: response.status }, null, 2)}\n` : problem(response.status, response.body));
    return 1;
  }
  io.stdout(show.json ? `${JSON.stringify(printed, null, 2)}\n` : show.human(printed));
  return 0;
}

/** The query string of a list: the filters given and the page options, under the API's names. */
export function listQuery(filters: Record<string, string | undefined>, values: { page?: string | undefined; 'page-size'?: string | undefined }): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value !== undefined) query.set(name, value);
  if (values.page !== undefined) query.set('page', values.page);
  if (values['page-size'] !== undefined) query.set('pageSize', values['page-size']);
  return query.size > 0 ? `?${query}` : '';
}

/** Refuses options given to an action that does not take them. */
export function refuseOptions(values: Record<string, unknown>, names: readonly string[], action: string): void {
  const given = names.filter((name) => values[name] !== undefined);
  if (given.length > 0) throw new UsageError(`${given.map((name) => `--${name}`).join(', ')} cannot be used with "${action}"`);
}

/** Node's parseArgs error, cut to its first sentence, which names the option (never its value). */
export function usageErrorOf(error: unknown): UsageError {
  return new UsageError((error as Error).message.split(/(?<=\.) /)[0]!);
}
