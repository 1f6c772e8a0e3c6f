import type { CliConfig } from '@herald/config';
import { adminRequest } from './admin-client';
import { COMMON_OPTIONS, listQuery, PAGING_OPTIONS, parseCommandLine, printAnswer, refuseOptions, UsageError, type CliIo } from './command';
import { column, pageTable, record } from './output';

export const TENANTS_USAGE = `  herald programs create  --name <name> [--id <id>]
  herald programs list    [--page <n>] [--page-size <n>]
  herald merchants create --program <id> --name <name> [--id <id>]
  herald merchants list   [--program <id>] [--page <n>] [--page-size <n>]`;

const OPTIONS = { ...COMMON_OPTIONS, ...PAGING_OPTIONS, name: { type: 'string' }, id: { type: 'string' }, program: { type: 'string' } } as const;

const PROGRAM_COLUMNS = [column('ID', 'id'), column('NAME', 'name'), column('CREATED', 'createdAt')];
const MERCHANT_COLUMNS = [column('ID', 'id'), column('PROGRAM', 'programId'), column('NAME', 'name'), column('CREATED', 'createdAt')];

/** `herald programs create|list`: the top-level tenants. */
export async function runProgramsCommand(argv: readonly string[], io: CliIo, config: CliConfig): Promise<number> {
  const { action, operands, values } = parseCommandLine(argv, OPTIONS, 'programs', ['create', 'list'] as const);
  if (operands.length > 0) throw new UsageError(`"programs ${action}" takes no operand`);
  refuseOptions(values, ['program'], `programs ${action}`);
  const json = values.json === true;
  if (action === 'list') {
    refuseOptions(values, ['name', 'id'], 'programs list');
    return printAnswer(io, await adminRequest(config, 'GET', `/programs${listQuery({}, values)}`), { json, human: (body) => pageTable(body, PROGRAM_COLUMNS) });
  }
  refuseOptions(values, ['page', 'page-size'], 'programs create');
  if (values.name === undefined) throw new UsageError('--name is required');
  const body = { name: values.name, ...(values.id === undefined ? {} : { id: values.id }) };
  return printAnswer(io, await adminRequest(config, 'POST', '/programs', body), { json, human: (answer) => record(answer) });
}

/** `herald merchants create|list`: the merchants of programs. */
export async function runMerchantsCommand(argv: readonly string[], io: CliIo, config: CliConfig): Promise<number> {
  const { action, operands, values } = parseCommandLine(argv, OPTIONS, 'merchants', ['create', 'list'] as const);
  if (operands.length > 0) throw new UsageError(`"merchants ${action}" takes no operand`);
  const json = values.json === true;
  if (action === 'list') {
    refuseOptions(values, ['name', 'id'], 'merchants list');
    const query = listQuery({ programId: values.program }, values);
    return printAnswer(io, await adminRequest(config, 'GET', `/merchants${query}`), { json, human: (body) => pageTable(body, MERCHANT_COLUMNS) });
  }
  refuseOptions(values, ['page', 'page-size'], 'merchants create');
  if (values.program === undefined || values.name === undefined) throw new UsageError('"merchants create" needs --program <id> and --name <name>');
  const body = { programId: values.program, name: values.name, ...(values.id === undefined ? {} : { id: values.id }) };
  return printAnswer(io, await adminRequest(config, 'POST', '/merchants', body), { json, human: (answer) => record(answer) });
}
