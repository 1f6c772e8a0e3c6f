import { randomUUID } from 'node:crypto';
import { Router } from 'express';
import { compileValidator, isUuid } from '@herald/domain';
import type { ApiKeyRepository, TenantRepository } from '@herald/db';
import { HttpError } from '../http/http-error';
import { parseBody } from '../http/validate-body';
import {
  createApiKeySchema,
  createMerchantSchema,
  createProgramSchema,
  type CreateApiKeyBody,
  type CreateMerchantBody,
  type CreateProgramBody,
} from './schemas';

const validateCreateProgram = compileValidator<CreateProgramBody>(createProgramSchema);
const validateCreateMerchant = compileValidator<CreateMerchantBody>(createMerchantSchema);
const validateCreateApiKey = compileValidator<CreateApiKeyBody>(createApiKeySchema);

/** Bootstrap of tenants and merchant keys, for support and admins (mounted behind the admin token). */
export function adminRouter(deps: {
  tenants: TenantRepository;
  apiKeys: ApiKeyRepository;
  /** Called once a key is revoked, so that this process's key cache refuses it at once. */
  onKeyRevoked: () => void;
}): Router {
  const router = Router();

  router.post('/programs', async (req, res) => {
    const body = parseBody(validateCreateProgram, req.body);
    const program = await deps.tenants.createProgram({ id: body.id ?? randomUUID(), name: body.name });
    res.status(201).json(program);
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

function unknown(field: string, value: string): HttpError {
  return new HttpError(422, 'unknown_reference', 'Unprocessable Content', `No ${field.replace(/Id$/, '')} "${value}".`, {
    errors: [{ pointer: `/${field}`, message: 'does not exist' }],
  });
}
