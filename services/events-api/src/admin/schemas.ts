import { TENANT_ID_PATTERN } from '@herald/domain';
import { pagingParameters } from '../http/query';

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

/** Query of GET /admin/programs. */
export const programsQuerySchema = {
  $id: 'herald:admin/programs-query',
  type: 'object',
  additionalProperties: false,
  properties: { ...pagingParameters },
} as const;

/** Query of GET /admin/merchants. */
export const merchantsQuerySchema = {
  $id: 'herald:admin/merchants-query',
  type: 'object',
  additionalProperties: false,
  properties: { programId: { ...tenantId, description: "This program's merchants." }, ...pagingParameters },
} as const;

/** Query of GET /admin/api-keys: revoked keys are listed too, with revokedAt. */
export const apiKeysQuerySchema = {
  $id: 'herald:admin/api-keys-query',
  type: 'object',
  additionalProperties: false,
  properties: {
    programId: { ...tenantId, description: "Keys of this program: its own and its merchants'." },
    merchantId: { ...tenantId, description: "This merchant's keys." },
    ...pagingParameters,
  },
} as const;

interface PagingQuery {
  page?: number;
  pageSize?: number;
}
export type ProgramsQuery = PagingQuery;
export type MerchantsQuery = PagingQuery & { programId?: string };
export type ApiKeysQuery = PagingQuery & { programId?: string; merchantId?: string };
