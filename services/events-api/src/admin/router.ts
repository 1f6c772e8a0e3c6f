import { randomUUID } from 'node:crypto';
import { Router } from 'express';
import { compileValidator, isUuid } from '@herald/domain';
import type { ApiKeyRepository, TenantRepository } from '@herald/db';
import { HttpError } from '../http/http-error';
import { pageOf, parseQuery } from '../http/query';
import { parseBody } from '../http/validate-body';
import {
  apiKeysQuerySchema,
  createApiKeySchema,
  createMerchantSchema,
  createProgramSchema,
  merchantsQuerySchema,
  programsQuerySchema,
  type ApiKeysQuery,
  type CreateApiKeyBody,
  type CreateMerchantBody,
  type CreateProgramBody,
  type MerchantsQuery,
  type ProgramsQuery,
} from './schemas';

const validateCreateProgram = compileValidator<CreateProgramBody>(createProgramSchema);
const validateCreateMerchant = compileValidator<CreateMerchantBody>(createMerchantSchema);
const validateCreateApiKey = compileValidator<CreateApiKeyBody>(createApiKeySchema);
const validateProgramsQuery = compileValidator<ProgramsQuery>(programsQuerySchema);
const validateMerchantsQuery = compileValidator<MerchantsQuery>(merchantsQuerySchema);
const validateApiKeysQuery = compileValidator<ApiKeysQuery>(apiKeysQuerySchema);

/**
 * Tenants and merchant keys, for support and admins (mounted behind the admin token): create and
 * list programs and merchants, create, list and revoke API keys. Lists are pages of
 * `{ page, pageSize, count, totalPages, data }`.
 */
export function adminRouter(deps: {
  tenants: TenantRepository;
  apiKeys: ApiKeyRepository;
  /** Called with a new key, so that this process knows its prefix before the next reload of the prefixes. */
  onKeyCreated: (key: string) => void;
  /** Called once a key is revoked, so that this process's key cache refuses it at once. */
  onKeyRevoked: () => void;
  /** EGRESS_ADDRESSES, which support hands to merchants whose target has no authentication. */
  egressAddresses: readonly string[];
}): Router {
  const router = Router();

  router.get('/egress-addresses', (_req, res) => {
    res.json({ addresses: deps.egressAddresses });
  });

  router.post('/programs', async (req, res) => {
    const body = parseBody(validateCreateProgram, req.body);
    const program = await deps.tenants.createProgram({ id: body.id ?? randomUUID(), name: body.name });
    res.status(201).json(program);
  });

  router.get('/programs', async (req, res) => {
    const { page, pageSize } = pageOf(parseQuery(validateProgramsQuery, req.query));
    res.json(paged(page, pageSize, await deps.tenants.listPrograms(page, pageSize)));
  });

  router.get('/merchants', async (req, res) => {
    const query = parseQuery(validateMerchantsQuery, req.query);
    const { page, pageSize } = pageOf(query);
    const filter = query.programId === undefined ? {} : { programId: query.programId };
    res.json(paged(page, pageSize, await deps.tenants.listMerchants(filter, page, pageSize)));
  });

  router.get('/api-keys', async (req, res) => {
    const query = parseQuery(validateApiKeysQuery, req.query);
    const { page, pageSize } = pageOf(query);
    const filter = {
      ...(query.programId === undefined ? {} : { programId: query.programId }),
      ...(query.merchantId === undefined ? {} : { merchantId: query.merchantId }),
    };
    res.json(paged(page, pageSize, await deps.apiKeys.list(filter, page, pageSize)));
  });

  router.post('/merchants', async (req, res) => {
    const body = parseBody(validateCreateMerchant, req.body);
    if (!(await deps.tenants.findProgram(body.programId))) throw unknown('programId', body.programId);
    const merchant = await deps.tenants.createMerchant({ id: body.id ?? randomUUID(), programId: body.programId, name: body.name });
    res.status(201).json(merchant);
  });

  router.post('/api-keys', async (req, res) => {
    const body = parseBody(validateCreateApiKey, req.body);
    if ('merchantId' in body) {
      if (!(await deps.tenants.findMerchant(body.merchantId))) throw unknown('merchantId', body.merchantId);
    } else if (!(await deps.tenants.findProgram(body.programId))) {
      throw unknown('programId', body.programId);
    }
    const { key, record } = await deps.apiKeys.create(body);
    deps.onKeyCreated(key);
    // The only time the key is ever shown: Herald keeps its hash alone.
    res.status(201).json({ ...record, key });
  });

  router.delete('/api-keys/:id', async (req, res) => {
    const id = req.params.id!;
    const record = isUuid(id) ? await deps.apiKeys.revoke(id) : null;
    if (!record) throw new HttpError(404, 'not_found', 'Not Found', `No API key "${id}".`);
    deps.onKeyRevoked();
    res.json(record);
  });

  return router;
}

function paged<T>(page: number, pageSize: number, { count, data }: { count: number; data: T[] }) {
  return { page, pageSize, count, totalPages: Math.ceil(count / pageSize), data };
}

function unknown(field: string, value: string): HttpError {
  return new HttpError(422, 'unknown_reference', 'Unprocessable Content', `No ${field.replace(/Id$/, '')} "${value}".`, {
    errors: [{ pointer: `/${field}`, message: 'does not exist' }],
  });
}
