import { parseArgs } from 'node:util';
import type { CliConfig } from '@herald/config';
import { adminRequest, type AdminResponse } from './admin-client';
import { printAnswer, UsageError, usageErrorOf, type CliIo } from './command';

export const TARGETS_USAGE = `  pnpm herald targets set    (--program <id> | --merchant <id>) --url <url> --auth none|basic|oauth
                             [--username <name> --password-stdin] [--auth-url <url>]
                             [--token-request spec|form] [--scope <scopes>] [--no-verify]
                             [--object-types a,b] [--event-types a,b] [--disabled]
  pnpm herald targets get    (--program <id> | --merchant <id>)
  pnpm herald targets delete (--program <id> | --merchant <id>)
  pnpm herald targets test   (--program <id> | --merchant <id>)
  pnpm herald targets signing-secret show   (--program <id> | --merchant <id>)
  pnpm herald targets signing-secret rotate (--program <id> | --merchant <id>) [--show-secret]

Callbacks are signed (Standard Webhooks); "signing-secret show" prints the secret merchants verify
them with. "rotate" makes a new one (the old one keeps signing for the grace period) and prints
it only with --show-secret.

"targets get" shows the target with its delivery health: circuit breaker state (closed, open,
half_open), callbacks in flight and callbacks deferred (waiting without spending attempts).

An OAuth target's credentials are checked with one token request before it is saved; --no-verify
skips the check (a token endpoint not live yet). --token-request form sends the RFC 6749 request
of standard OAuth 2.0 servers instead of the spec's. "targets test" sends one test callback now
and prints what happened; it exits 1 when the callback was not delivered.

The password is read from standard input (--password-stdin), never from the command line, where
other users could see it in the process list. Example:
  printf '%s' "$PASSWORD" | pnpm herald targets set --merchant m1 --url https://shop.example/hooks \\
    --auth basic --username shop --password-stdin`;

const OPTIONS = {
  program: { type: 'string' },
  merchant: { type: 'string' },
  url: { type: 'string' },
  auth: { type: 'string' },
  username: { type: 'string' },
  'password-stdin': { type: 'boolean' },
  'auth-url': { type: 'string' },
  'token-request': { type: 'string' },
  scope: { type: 'string' },
  'no-verify': { type: 'boolean' },
  'object-types': { type: 'string' },
  'event-types': { type: 'string' },
  disabled: { type: 'boolean' },
  'show-secret': { type: 'boolean' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

type Action = 'set' | 'get' | 'delete' | 'test' | 'signing-secret show' | 'signing-secret rotate';

/**
 * `herald targets set|get|delete|test|signing-secret`: the admin API's notification target
 * operations for support staff. Prints the answer as JSON on stdout; returns the exit code (0 done,
 * 1 refused or failed, or a test callback not delivered, 2 wrong command line).
 */
export async function runTargetsCommand(argv: readonly string[], io: CliIo, config: CliConfig): Promise<number> {
  const { action, values } = parseCommandLine(argv);
  const owner = ownerPath(values);
  if (values['show-secret'] !== undefined && action !== 'signing-secret rotate') throw new UsageError('--show-secret only goes with "targets signing-secret rotate"');
  let response: AdminResponse;
  if (action === 'signing-secret show' || action === 'signing-secret rotate') {
    refuseSetOptions(values, action);
    const show = action === 'signing-secret show';
    response = await adminRequest(config, show ? 'GET' : 'POST', `${owner.path}/signing-secret${show ? '' : '/rotate'}`);
    // A secret reaches the terminal (and its scrollback) only when asked for by name.
    if (show || values['show-secret']) return printAnswer(io, response);
    const { secret: _secret, ...rest } = (response.body ?? {}) as Record<string, unknown>;
    return printAnswer(io, response, { ...rest, rotated: true, secret: 'hidden: run "targets signing-secret show" or pass --show-secret' });
  }
  if (action === 'set') {
    response = await adminRequest(config, 'PUT', values['no-verify'] ? `${owner.path}?verify=false` : owner.path, await targetBody(values, io));
  } else {
    refuseSetOptions(values, action);
    if (action === 'test') {
      response = await adminRequest(config, 'POST', `${owner.path}/test`);
      const code = printAnswer(io, response);
      return code === 0 && (response.body as { delivered?: unknown }).delivered !== true ? 1 : code;
    }
    response = await adminRequest(config, action === 'get' ? 'GET' : 'DELETE', owner.path);
  }

  return printAnswer(io, response, action === 'delete' ? { deleted: true, ...owner.id } : response.body);
}

function parseCommandLine(argv: readonly string[]): { action: Action; values: Values } {
  // Refused before parsing, and without echoing the argument: it holds the password.
  if (argv.some((arg) => arg === '--password' || arg.startsWith('--password='))) {
    throw new UsageError('--password is not accepted: pipe the password into standard input and pass --password-stdin');
  }
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw usageErrorOf(error);
  }
  const [group, ...rest] = parsed.positionals;
  const action = rest.join(' ');
  const actions: readonly string[] = ['set', 'get', 'delete', 'test', 'signing-secret show', 'signing-secret rotate'] satisfies Action[];
  if (group !== 'targets' || !actions.includes(action)) {
    throw new UsageError(
      `expected "targets set", "targets get", "targets delete", "targets test" or "targets signing-secret show|rotate", got "${parsed.positionals.join(' ')}"`,
    );
  }
  return { action: action as Action, values: parsed.values };
}

function ownerPath(values: Values): { path: string; id: { programId: string } | { merchantId: string } } {
  const { program, merchant } = values;
  if ((program === undefined) === (merchant === undefined)) throw new UsageError('give exactly one of --program <id> and --merchant <id>');
  return program !== undefined
    ? { path: `/programs/${encodeURIComponent(program)}/notification-target`, id: { programId: program } }
    : { path: `/merchants/${encodeURIComponent(merchant!)}/notification-target`, id: { merchantId: merchant! } };
}

const SET_ONLY = ['url', 'auth', 'username', 'password-stdin', 'auth-url', 'token-request', 'scope', 'no-verify', 'object-types', 'event-types', 'disabled'] as const;

function refuseSetOptions(values: Values, action: string): void {
  const given = SET_ONLY.filter((name) => values[name] !== undefined);
  if (given.length > 0) throw new UsageError(`${given.map((name) => `--${name}`).join(', ')} only go with "targets set", not "${action}"`);
}

/** The PUT body; the server validates every value, this only checks which options go together. */
async function targetBody(values: Values, io: CliIo): Promise<Record<string, unknown>> {
  if (values.url === undefined) throw new UsageError('--url is required');
  const mode = values.auth;
  if (mode !== 'none' && mode !== 'basic' && mode !== 'oauth') throw new UsageError('--auth none, --auth basic or --auth oauth is required');

  const needed = mode === 'none' ? [] : mode === 'basic' ? ['username', 'password-stdin'] : ['username', 'password-stdin', 'auth-url'];
  const allowed = mode === 'oauth' ? [...needed, 'token-request', 'scope', 'no-verify'] : needed;
  for (const name of ['username', 'password-stdin', 'auth-url', 'token-request', 'scope', 'no-verify'] as const) {
    const given = values[name] !== undefined;
    if (given && !allowed.includes(name)) throw new UsageError(`--${name} does not go with --auth ${mode}`);
    if (!given && needed.includes(name)) throw new UsageError(`--auth ${mode} needs --${name}`);
  }

  const auth: Record<string, string> = { mode };
  if (values['auth-url'] !== undefined) auth.authUrl = values['auth-url'];
  if (values['token-request'] !== undefined) auth.tokenRequest = values['token-request'];
  if (values.scope !== undefined) auth.scope = values.scope;
  if (values.username !== undefined) auth.username = values.username;
  if (values['password-stdin']) auth.password = await passwordFromStdin(io);

  const notifications = {
    ...(values['object-types'] === undefined ? {} : { objectTypes: list(values['object-types']) }),
    ...(values['event-types'] === undefined ? {} : { eventTypes: list(values['event-types']) }),
  };
  return { url: values.url, auth, notifications, enabled: !values.disabled };
}

async function passwordFromStdin(io: CliIo): Promise<string> {
  const input = await io.readStdin();
  if (input === undefined) throw new UsageError('--password-stdin: pipe the password into standard input (it is a terminal)');
  // `echo secret |` adds a newline that is not part of the password.
  return input.replace(/\r?\n$/, '');
}

function list(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}
