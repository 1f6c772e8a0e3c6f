import type { CliConfig } from '@herald/config';
import { adminRequest } from './admin-client';
import { COMMON_OPTIONS, parseCommandLine, printAnswer, UsageError, type CliIo } from './command';
import { record } from './output';

export const PORTAL_LINKS_USAGE = `  herald portal-links create --merchant <id> | --program <id> [--expires-in <seconds>]
    A single-use link to the merchant portal (docs/portal.md) for support to hand to the merchant;
    it works once, for PORTAL_LINK_TTL_SECONDS (default 900) or --expires-in seconds if fewer.`;

const OPTIONS = { ...COMMON_OPTIONS, merchant: { type: 'string' }, program: { type: 'string' }, 'expires-in': { type: 'string' } } as const;

/** `herald portal-links create`: a link that opens the merchant portal once. */
export async function runPortalLinksCommand(argv: readonly string[], io: CliIo, config: CliConfig): Promise<number> {
  const { operands, values } = parseCommandLine(argv, OPTIONS, 'portal-links', ['create'] as const);
  if (operands.length > 0) throw new UsageError('"portal-links create" takes no operand');
  if ((values.merchant === undefined) === (values.program === undefined))
    throw new UsageError('"portal-links create" needs --merchant <id> or --program <id>, one of them');
  const owner = values.merchant === undefined ? `/programs/${encodeURIComponent(values.program!)}` : `/merchants/${encodeURIComponent(values.merchant)}`;
  const expiresIn = values['expires-in'];
  if (expiresIn !== undefined && !/^\d{1,9}$/.test(expiresIn)) throw new UsageError(`--expires-in must be a whole number of seconds, got "${expiresIn}"`);
  const body = expiresIn === undefined ? {} : { expiresInSeconds: Number(expiresIn) };
  return printAnswer(io, await adminRequest(config, 'POST', `${owner}/portal-links`, body), { json: values.json === true, human: (answer) => record(answer) });
}
