import type { PrismaClient } from '../client';

export interface ProgramRecord {
  id: string;
  name: string;
  createdAt: Date;
}

export interface MerchantRecord {
  id: string;
  programId: string;
  name: string;
  createdAt: Date;
}

/** Raised when a create names an id that exists already. */
export class DuplicateIdError extends Error {
  override readonly name = 'DuplicateIdError';
  readonly code = 'duplicate_id';
  constructor(
    readonly entity: 'program' | 'merchant',
    readonly id: string,
  ) {
    super(`A ${entity} with id "${id}" exists already.`);
  }
}

export function tenantRepository(prisma: PrismaClient) {
  return {
    async createProgram(input: { id: string; name: string }): Promise<ProgramRecord> {
      try {
        return await prisma.program.create({ data: input });
      } catch (error) {
        throw uniqueViolation(error) ? new DuplicateIdError('program', input.id) : error;
      }
    },

    async createMerchant(input: { id: string; programId: string; name: string }): Promise<MerchantRecord> {
      try {
        return await prisma.merchant.create({ data: input });
      } catch (error) {
        throw uniqueViolation(error) ? new DuplicateIdError('merchant', input.id) : error;
      }
    },

    findProgram(id: string): Promise<ProgramRecord | null> {
      return prisma.program.findUnique({ where: { id } });
    },

    findMerchant(id: string): Promise<MerchantRecord | null> {
      return prisma.merchant.findUnique({ where: { id } });
    },
  };
}

function uniqueViolation(error: unknown): boolean {
  return (error as { code?: string }).code === 'P2002';
}

export type TenantRepository = ReturnType<typeof tenantRepository>;
