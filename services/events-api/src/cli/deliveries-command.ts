import { parseArgs } from 'node:util';
import type { CliConfig } from '@herald/config';
import { adminRequest } from './admin-client';
import { COMMON_OPTIONS, printAnswer, UsageError, usageErrorOf, type CliIo, type Presentation } from './command';
import { column, longTexts, pageTable, record, table } from './output';

export const DELIVERIES_USAGE = `  herald deliveries list   [filters] [--page <n>] [--page-size <n>]
  herald deliveries show   <deliveryId> | --event <eventId>
  herald deliveries replay <deliveryId> | filters [--limit <n>]

Filters (all given must match): --status pending|succeeded|failed, --program <id>,
--merchant <id>, --event <eventId>, --target <targetId>, --created-from <time>, --created-to <time>
(RFC 3339). A bulk replay needs at least one filter besides --status, takes the oldest matching
deliveries first (100, or --limit up to 1000) and says whether more match. Examples:
  herald deliveries list --merchant m1 --status failed
  herald deliveries show --event Event-8d0e5c1e-2f7a-4c7e-9a51-3b1f0f6f2f10
  herald deliveries replay --target <targetId> --status failed --created-from 2026-01-01T00:00:00Z`;

const DELIVERY_COLUMNS = [
  column('ID', 'id'),
  column('EVENT', 'eventId'),
  column('TARGET', 'targetId'),
  column('STATUS', 'status'),
  column('ATTEMPTS', 'attemptsMade'),
  column('LAST HTTP', 'lastStatusCode'),
  column('LAST ERROR', 'lastError'),
  column('CREATED', 'createdAt'),
];
const ATTEMPT_COLUMNS = [
  column('#', 'number'),
  column('STARTED', 'startedAt'),
  column('MS', 'durationMs'),
  column('HTTP', 'statusCode'),
  column('ERROR', 'errorKind'),
  column('MESSAGE', 'errorMessage'),
];
const REPLAYED_COLUMNS = [column('ID', 'id'), column('STATUS', 'status'), column('JOB', 'job')];

const FILTERS = {
  status: 'status',
  program: 'programId',
  merchant: 'merchantId',
  event: 'eventId',
  target: 'targetId',
  'created-from': 'createdFrom',
  'created-to': 'createdTo',
} as const;

const OPTIONS = {
  ...COMMON_OPTIONS,
  ...(Object.fromEntries(Object.keys(FILTERS).map((name) => [name, { type: 'string' }])) as Record<keyof typeof FILTERS, { type: 'string' }>),
  page: { type: 'string' },
  'page-size': { type: 'string' },
  limit: { type: 'string' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];
type Action = 'list' | 'show' | 'replay';

/**
 * `herald deliveries list|show|replay`: the delivery history and replay of the admin API for
 * support staff. Prints the answer as JSON on stdout; returns the exit code (0 done, 1 refused or
 * failed, 2 wrong command line). The server checks every value; this only maps options to it.
 */
export async function runDeliveriesCommand(argv: readonly string[], io: CliIo, config: CliConfig): Promise<number> {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw usageErrorOf(error);
  }
  const [group, action, id, ...rest] = parsed.positionals;
  if (group !== 'deliveries' || (action !== 'list' && action !== 'show' && action !== 'replay') || rest.length > 0) {
    throw new UsageError(`expected "deliveries list", "deliveries show" or "deliveries replay", got "${parsed.positionals.join(' ')}"`);
  }
  const { values } = parsed;
  const filter = filterOf(values);
  refuseOptions(values, action, id);
  const json = values.json === true;
  const detail: Presentation = { json, human: shownDelivery };
  const replayed: Presentation = {
    json,
    human: (body) => {
      const answer = body as { deliveries: Array<Record<string, unknown>>; more: boolean };
      return table(answer.deliveries, REPLAYED_COLUMNS) + (answer.more ? 'More deliveries match: run the replay again for the next ones.\n' : '');
    },
  };

  if (action === 'list') {
    const query = new URLSearchParams(filter);
    if (values.page !== undefined) query.set('page', values.page);
    if (values['page-size'] !== undefined) query.set('pageSize', values['page-size']);
    return printAnswer(io, await adminRequest(config, 'GET', `/deliveries${query.size > 0 ? `?${query}` : ''}`), {
      json,
      human: (body) => pageTable(body, DELIVERY_COLUMNS),
    });
  }
  if (action === 'show') {
    if (id !== undefined) {
      if (Object.keys(filter).length > 0) throw new UsageError('"deliveries show <deliveryId>" takes no other option');
      return printAnswer(io, await adminRequest(config, 'GET', `/deliveries/${encodeURIComponent(id)}`), detail);
    }
    const { eventId, ...others } = filter;
    if (eventId === undefined || Object.keys(others).length > 0) throw new UsageError('"deliveries show" needs a delivery id or --event <eventId> alone');
    return printAnswer(io, await adminRequest(config, 'GET', `/events/${encodeURIComponent(eventId)}/deliveries`), {
      json,
      human: (body) => (body as { data: unknown[] }).data.map(shownDelivery).join('\n'),
    });
  }
  if (id !== undefined) {
    if (Object.keys(filter).length > 0 || values.limit !== undefined) throw new UsageError('"deliveries replay <deliveryId>" takes no other option');
    return printAnswer(io, await adminRequest(config, 'POST', `/deliveries/${encodeURIComponent(id)}/replay`), replayed);
  }
  const limit = values.limit === undefined ? {} : { limit: wholeNumber('--limit', values.limit) };
  return printAnswer(io, await adminRequest(config, 'POST', '/deliveries/replay', { ...filter, ...limit }), replayed);
}

/**
 * One delivery: its fields, its attempts as a table, then what the merchant answered to each attempt
 * (the start of the body, as stored): the first thing support needs, too long for a table cell.
 */
function shownDelivery(body: unknown): string {
  const attempts = (body as { attempts?: unknown }).attempts;
  const label = (attempt: Record<string, unknown>) => `#${String(attempt.number)}${attempt.statusCode === null ? '' : ` (HTTP ${String(attempt.statusCode)})`}`;
  return record(body, { attempts: ATTEMPT_COLUMNS }) + longTexts(attempts, "the merchant's answers", label, 'responseBody');
}

/** The filter options given, under the API's names. */
function filterOf(values: Values): Record<string, string> {
  const filter: Record<string, string> = {};
  for (const [option, field] of Object.entries(FILTERS)) {
    const value = values[option as keyof typeof FILTERS];
    if (value !== undefined) filter[field] = value;
  }
  return filter;
}

function refuseOptions(values: Values, action: Action, id: string | undefined): void {
  const paging = (['page', 'page-size'] as const).filter((name) => values[name] !== undefined);
  if (action !== 'list' && paging.length > 0) throw new UsageError(`${paging.map((name) => `--${name}`).join(', ')} can only be used with "deliveries list"`);
  if (action !== 'replay' && values.limit !== undefined) throw new UsageError('--limit can only be used with "deliveries replay"');
  if (action === 'list' && id !== undefined) throw new UsageError(`"deliveries list" takes no delivery id, got "${id}"`);
}

function wholeNumber(option: string, value: string): number {
  if (!/^\d{1,9}$/.test(value)) throw new UsageError(`${option} must be a whole number, got "${value}"`);
  return Number(value);
}
