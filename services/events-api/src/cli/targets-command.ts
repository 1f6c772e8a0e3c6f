import type { CliConfig } from '@herald/config';
import { adminRequest } from './admin-client';
import {
  COMMON_OPTIONS,
  listQuery,
  PAGING_OPTIONS,
  parseCommandLine,
  printAnswer,
  refuseOptions,
  UsageError,
  type CliIo,
  type OptionValues,
  type Presentation,
} from './command';
import { column, pageTable, record, type Column } from './output';

export const TARGETS_USAGE = `  herald targets list    [--program <id>] [--merchant <id>] [--page <n>] [--page-size <n>]
  herald targets show    (--program <id> | --merchant <id>)   ("get" is the same)
  herald targets get     (--program <id> | --merchant <id>)
  herald targets set     (--program <id> | --merchant <id>) --url <url> --auth none|basic|oauth
                         [--username <name> --password-stdin] [--auth-url <url>]
                         [--object-types a,b] [--event-types a,b] [--ordering none|object] [--disabled]
  herald targets update  (--program <id> | --merchant <id>) [--url <url>] [--auth none|basic|oauth]
                         [--username <name>] [--password-stdin] [--auth-url <url>]
                         [--object-types a,b|all] [--event-types a,b|all] [--ordering none|object]
  (set and update also take the delivery policy: [--attempts <n>] [--max-backoff-ms <ms>]
   [--timeout-ms <ms>] [--max-in-flight <n>]; in update, "default" returns one to its global default)
  herald targets enable  (--program <id> | --merchant <id>)
  herald targets disable (--program <id> | --merchant <id>)
  herald targets delete  (--program <id> | --merchant <id>)
  herald targets test    (--program <id> | --merchant <id>)
  herald targets signing-secret show   (--program <id> | --merchant <id>)
  herald targets signing-secret rotate (--program <id> | --merchant <id>) [--show-secret]

"show" includes the target's delivery health: circuit breaker state (closed, open, half_open),
callbacks in flight and deferred (waiting without spending attempts), last success.
--ordering object sends each object's callbacks one after the other, in the sequence order of its
events, each once the previous one is delivered or has failed for good (default none: any order).
OAuth targets ("set" with --auth oauth) take [--token-request spec|form|client_secret_post]
[--scope <scopes>] [--no-verify]: their credentials are checked with one token request before they
are saved, unless --no-verify; --token-request form sends the RFC 6749 request of standard OAuth 2.0
servers (credentials in a Basic header), client_secret_post the same request with the credentials in
its body, for servers that refuse form's Basic header when the credentials hold a space, %, +, & or =.
"test" sends one test callback now and prints what happened; it exits 1 when it was not delivered.
Callbacks are signed (Standard Webhooks): "signing-secret show" prints the secret merchants verify
them with; "rotate" makes a new one (the old one keeps signing for the grace period) and prints it
only with --show-secret.

"set" replaces the whole target; "update", "enable" and "disable" change only what they name and
keep the stored password. A password is read with --password-stdin: piped in, or typed at a prompt
that does not echo it; never from the command line, where other users could see it. Example:
  printf '%s' "$PASSWORD" | herald targets set --merchant m1 --url https://shop.example/hooks \\
    --auth basic --username shop --password-stdin`;

const OPTIONS = {
  ...COMMON_OPTIONS,
  ...PAGING_OPTIONS,
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
  'show-secret': { type: 'boolean' },
  'object-types': { type: 'string' },
  'event-types': { type: 'string' },
  ordering: { type: 'string' },
  disabled: { type: 'boolean' },
  attempts: { type: 'string' },
  'max-backoff-ms': { type: 'string' },
  'timeout-ms': { type: 'string' },
  'max-in-flight': { type: 'string' },
  'max-rate': { type: 'string' },
} as const;

const ACTIONS = ['list', 'show', 'get', 'set', 'update', 'enable', 'disable', 'delete', 'test', 'signing-secret'] as const;
type Values = OptionValues<typeof OPTIONS>;

/** The delivery policy's options, each with the field of the body's `delivery` it sets. */
const POLICY_OPTIONS = {
  attempts: 'attempts',
  'max-backoff-ms': 'maxBackoffMs',
  'timeout-ms': 'timeoutMs',
  'max-in-flight': 'maxInFlight',
  'max-rate': 'maxRatePerSecond',
} as const;
const SETTINGS = [
  'url',
  'auth',
  'username',
  'password-stdin',
  'auth-url',
  'object-types',
  'event-types',
  'ordering',
  ...(Object.keys(POLICY_OPTIONS) as Array<keyof typeof POLICY_OPTIONS>),
] as const;
/** Options of "targets set" alone. */
const SET_ONLY = ['token-request', 'scope', 'no-verify', 'disabled'] as const;
const PAGING = ['page', 'page-size'] as const;

const TARGET_COLUMNS: Column[] = [
  column('ID', 'id'),
  { heading: 'OWNER', cell: (t) => (t.merchantId === null ? `program ${String(t.programId)}` : `merchant ${String(t.merchantId)}`) },
  column('URL', 'url'),
  column('AUTH', 'auth.mode'),
  column('ORDERING', 'ordering'),
  { heading: 'ENABLED', cell: (t) => (t.enabled ? 'yes' : t.disabledReason ? `no (${String(t.disabledReason)})` : 'no') },
  column('LAST SUCCESS', 'health.lastSuccessAt'),
  column('FAILING SINCE', 'health.failingSince'),
];

/**
 * `herald targets …`: the notification targets of programs and merchants, over the admin API.
 * Returns the exit code (0 done, 1 refused or failed, 2 wrong command line).
 */
export async function runTargetsCommand(argv: readonly string[], io: CliIo, config: CliConfig): Promise<number> {
  const { action, operands, values } = parseCommandLine(argv, OPTIONS, 'targets', ACTIONS);
  const json = values.json === true;
  const show = { json, human: (body: unknown) => record(body) };
  if (action === 'signing-secret') return signingSecret(operands, values, io, config, show);
  if (operands.length > 0) throw new UsageError(`"targets ${action}" takes no operand`);
  if (values['show-secret'] !== undefined) throw new UsageError('--show-secret only goes with "targets signing-secret rotate"');
  if (action !== 'set')
    refuseOptions(
      values,
      SET_ONLY.filter((name) => name !== 'disabled'),
      `targets ${action}`,
    );

  if (action === 'list') {
    refuseOptions(values, [...SETTINGS, 'disabled'], 'targets list');
    const query = listQuery({ programId: values.program, merchantId: values.merchant }, values);
    return printAnswer(io, await adminRequest(config, 'GET', `/notification-targets${query}`), { json, human: (body) => pageTable(body, TARGET_COLUMNS) });
  }
  refuseOptions(values, PAGING, `targets ${action}`);
  const owner = ownerPath(values);
  switch (action) {
    case 'set':
      return printAnswer(
        io,
        await adminRequest(config, 'PUT', values['no-verify'] ? `${owner.path}?verify=false` : owner.path, await targetBody(values, io)),
        show,
      );
    case 'test': {
      refuseOptions(values, [...SETTINGS, 'disabled'], 'targets test');
      const response = await adminRequest(config, 'POST', `${owner.path}/test`);
      const code = printAnswer(io, response, show);
      return code === 0 && (response.body as { delivered?: unknown }).delivered !== true ? 1 : code;
    }
    case 'update':
      refuseOptions(values, SET_ONLY, 'targets update');
      return printAnswer(io, await adminRequest(config, 'PATCH', owner.path, await targetPatch(values, io)), show);
    case 'enable':
    case 'disable':
      refuseOptions(values, [...SETTINGS, 'disabled'], `targets ${action}`);
      return printAnswer(io, await adminRequest(config, 'PATCH', owner.path, { enabled: action === 'enable' }), show);
    case 'delete': {
      refuseOptions(values, [...SETTINGS, 'disabled'], 'targets delete');
      const deleted = { deleted: true, ...owner.id };
      return printAnswer(io, await adminRequest(config, 'DELETE', owner.path), show, deleted);
    }
    default:
      refuseOptions(values, [...SETTINGS, 'disabled'], `targets ${action}`);
      return printAnswer(io, await adminRequest(config, 'GET', owner.path), show);
  }
}

/** `targets signing-secret show|rotate`: a secret reaches the terminal only when asked for by name. */
async function signingSecret(operands: readonly string[], values: Values, io: CliIo, config: CliConfig, show: Presentation): Promise<number> {
  const [which, ...rest] = operands;
  if ((which !== 'show' && which !== 'rotate') || rest.length > 0)
    throw new UsageError(`expected "targets signing-secret show" or "targets signing-secret rotate", got "targets signing-secret ${operands.join(' ')}"`);
  if (which === 'show' && values['show-secret'] !== undefined) throw new UsageError('--show-secret only goes with "targets signing-secret rotate"');
  refuseOptions(values, [...SETTINGS, ...SET_ONLY, ...PAGING], `targets signing-secret ${which}`);
  const owner = ownerPath(values);
  const response = await adminRequest(config, which === 'show' ? 'GET' : 'POST', `${owner.path}/signing-secret${which === 'show' ? '' : '/rotate'}`);
  if (which === 'show' || values['show-secret']) return printAnswer(io, response, show);
  const { secret: _secret, ...others } = (response.body ?? {}) as Record<string, unknown>;
  return printAnswer(io, response, show, { ...others, rotated: true, secret: 'hidden: run "targets signing-secret show" or pass --show-secret' });
}

function ownerPath(values: Values): { path: string; id: { programId: string } | { merchantId: string } } {
  const { program, merchant } = values;
  if ((program === undefined) === (merchant === undefined)) throw new UsageError('give exactly one of --program <id> and --merchant <id>');
  return program !== undefined
    ? { path: `/programs/${encodeURIComponent(program)}/notification-target`, id: { programId: program } }
    : { path: `/merchants/${encodeURIComponent(merchant!)}/notification-target`, id: { merchantId: merchant! } };
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
  if (values['password-stdin']) auth.password = await readPassword(io);

  const notifications = {
    ...(values['object-types'] === undefined ? {} : { objectTypes: list(values['object-types']) }),
    ...(values['event-types'] === undefined ? {} : { eventTypes: list(values['event-types']) }),
  };
  return {
    url: values.url,
    auth,
    notifications,
    enabled: !values.disabled,
    ...(values.ordering === undefined ? {} : { ordering: values.ordering }),
    delivery: policyOf(values, false),
  };
}

/** The PATCH body (a JSON merge patch) of the options given: the rest of the target stays as it is. */
async function targetPatch(values: Values, io: CliIo): Promise<Record<string, unknown>> {
  const patch: Record<string, unknown> = {};
  if (values.url !== undefined) patch.url = values.url;
  const auth: Record<string, string> = {};
  if (values.auth !== undefined) auth.mode = values.auth;
  if (values.username !== undefined) auth.username = values.username;
  if (values['auth-url'] !== undefined) auth.authUrl = values['auth-url'];
  if (values['password-stdin']) auth.password = await readPassword(io);
  if (Object.keys(auth).length > 0) patch.auth = auth;
  const notifications: Record<string, string[] | null> = {};
  // "all" lifts the filter: null removes the list in a merge patch.
  if (values['object-types'] !== undefined) notifications.objectTypes = values['object-types'] === 'all' ? null : list(values['object-types']);
  if (values['event-types'] !== undefined) notifications.eventTypes = values['event-types'] === 'all' ? null : list(values['event-types']);
  if (Object.keys(notifications).length > 0) patch.notifications = notifications;
  if (values.ordering !== undefined) patch.ordering = values.ordering;
  const delivery = policyOf(values, true);
  if (Object.keys(delivery).length > 0) patch.delivery = delivery;
  if (Object.keys(patch).length === 0) throw new UsageError(`"targets update" needs at least one of ${SETTINGS.map((name) => `--${name}`).join(', ')}`);
  return patch;
}

/**
 * The `delivery` member of the options given. Numbers go as numbers and the server checks their
 * range; anything else goes as given, so that the server's 400 names the field. `default`
 * (update only) is a merge patch's null: back to the global default.
 */
function policyOf(values: Values, patch: boolean): Record<string, unknown> {
  const delivery: Record<string, unknown> = {};
  for (const [option, field] of Object.entries(POLICY_OPTIONS) as Array<[keyof typeof POLICY_OPTIONS, string]>) {
    const value = values[option];
    if (value === undefined) continue;
    if (patch && value === 'default') delivery[field] = null;
    else delivery[field] = /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  }
  return delivery;
}

/** The password piped into standard input, or typed at a prompt that does not echo it. */
async function readPassword(io: CliIo): Promise<string> {
  const piped = await io.readStdin();
  const input = piped ?? (await io.promptSecret('Password: '));
  if (input === undefined) throw new UsageError('--password-stdin: pipe the password into standard input, or run in a terminal to type it');
  // `echo secret |` adds a newline that is not part of the password.
  return input.replace(/\r?\n$/, '');
}

function list(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}
