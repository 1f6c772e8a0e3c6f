import { TENANT_ID_PATTERN } from '@herald/domain';

const tenantId = { type: 'string', pattern: TENANT_ID_PATTERN } as const;
const name = { type: 'string', minLength: 1, maxLength: 200 } as const;

export const createProgramSchema = {
  $id: 'herald:admin/create-program',
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { id: tenantId, name },
} as const;

export const createMerchantSchema = {
  $id: 'herald:admin/create-merchant',
  type: 'object',
  additionalProperties: false,
  required: ['programId', 'name'],
  properties: { id: tenantId, programId: tenantId, name },
} as const;

/** A key belongs to exactly one merchant or one program. */
export const createApiKeySchema = {
  $id: 'herald:admin/create-api-key',
  type: 'object',
  additionalProperties: false,
  properties: { merchantId: tenantId, programId: tenantId },
  oneOf: [{ required: ['merchantId'] }, { required: ['programId'] }],
} as const;

export interface CreateProgramBody {
  id?: string;
  name: string;
}
export interface CreateMerchantBody {
  id?: string;
  programId: string;
  name: string;
}
export type CreateApiKeyBody = { merchantId: string } | { programId: string };
