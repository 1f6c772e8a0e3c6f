import type { CliConfig } from '@herald/config';
import { adminRequest } from './admin-client';
import { COMMON_OPTIONS, listQuery, PAGING_OPTIONS, parseCommandLine, printAnswer, refuseOptions, UsageError, type CliIo } from './command';
import { column, pageTable, record } from './output';

export const API_KEYS_USAGE = `  herald api-keys create (--program <id> | --merchant <id>)
  herald api-keys list   [--program <id>] [--merchant <id>] [--page <n>] [--page-size <n>]
  herald api-keys revoke <keyId>

A new key is printed once (Herald keeps only its hash); with --json it is the "key" field.
Revoked keys are listed with the time they were revoked.`;

const OPTIONS = { ...COMMON_OPTIONS, ...PAGING_OPTIONS, program: { type: 'string' }, merchant: { type: 'string' } } as const;

const KEY_COLUMNS = [
  column('ID', 'id'),
  column('PREFIX', 'prefix'),
  column('PROGRAM', 'programId'),
  column('MERCHANT', 'merchantId'),
  column('CREATED', 'createdAt'),
  column('REVOKED', 'revokedAt'),
];

/** `herald api-keys create|list|revoke`: merchants' and programs' keys to GET /events. */
export async function runApiKeysCommand(argv: readonly string[], io: CliIo, config: CliConfig): Promise<number> {
  const { action, operands, values } = parseCommandLine(argv, OPTIONS, 'api-keys', ['create', 'list', 'revoke'] as const);
  const json = values.json === true;
  if (action === 'revoke') {
    refuseOptions(values, ['program', 'merchant', 'page', 'page-size'], 'api-keys revoke');
    const [id, ...rest] = operands;
    if (id === undefined || rest.length > 0) throw new UsageError('"api-keys revoke" needs one key id');
    return printAnswer(io, await adminRequest(config, 'DELETE', `/api-keys/${encodeURIComponent(id)}`), { json, human: (body) => record(body) });
  }
  if (operands.length > 0) throw new UsageError(`"api-keys ${action}" takes no operand`);
  if (action === 'list') {
    const query = listQuery({ programId: values.program, merchantId: values.merchant }, values);
    return printAnswer(io, await adminRequest(config, 'GET', `/api-keys${query}`), { json, human: (body) => pageTable(body, KEY_COLUMNS) });
  }
  refuseOptions(values, ['page', 'page-size'], 'api-keys create');
  if ((values.program === undefined) === (values.merchant === undefined)) throw new UsageError('give exactly one of --program <id> and --merchant <id>');
  const owner = values.program !== undefined ? { programId: values.program } : { merchantId: values.merchant };
  return printAnswer(io, await adminRequest(config, 'POST', '/api-keys', owner), {
    json,
    human: (body) => `${record(body)}\nThe key is shown this once: Herald keeps only its hash. Send it as the x-api-key header.\n`,
  });
}
