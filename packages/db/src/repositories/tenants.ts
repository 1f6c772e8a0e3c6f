import { HeraldError } from '@herald/domain';
import type { DatabasePool } from '../pool';
import { isUniqueViolation } from '../database-errors';
import { db, run, type RowOf } from '../sql';

/** Raised when a create names an id that exists already. */
export class DuplicateIdError extends HeraldError {
  readonly code = 'duplicate_id';
  constructor(
    readonly entity: 'program' | 'merchant',
    readonly id: string,
  ) {
    super(`A ${entity} with id "${id}" exists already.`);
  }
}

const PROGRAM_COLUMNS = ['id', 'name', 'created_at as createdAt'] as const;
const MERCHANT_COLUMNS = ['id', 'program_id as programId', 'name', 'created_at as createdAt'] as const;

/** Every statement of the repository, built from its parameters (the SQL snapshot compiles each). */
export const tenantQueries = {
  createProgram: (input: { id: string; name: string }) => db.insertInto('programs').values(input).returning(PROGRAM_COLUMNS),
  createMerchant: (input: { id: string; programId: string; name: string }) =>
    db.insertInto('merchants').values({ id: input.id, program_id: input.programId, name: input.name }).returning(MERCHANT_COLUMNS),
  findProgram: (id: string) => db.selectFrom('programs').select(PROGRAM_COLUMNS).where('id', '=', id),
  findMerchant: (id: string) => db.selectFrom('merchants').select(MERCHANT_COLUMNS).where('id', '=', id),
  programPage: (limit: number, offset: number) =>
    db.selectFrom('programs').select(PROGRAM_COLUMNS).orderBy('created_at').orderBy('id').limit(limit).offset(offset),
  programCount: () => db.selectFrom('programs').select((eb) => eb.fn.countAll<string>().as('count')),
  merchantPage: (filter: MerchantFilter, limit: number, offset: number) =>
    merchantsOf(filter).select(MERCHANT_COLUMNS).orderBy('created_at').orderBy('id').limit(limit).offset(offset),
  merchantCount: (filter: MerchantFilter) => merchantsOf(filter).select((eb) => eb.fn.countAll<string>().as('count')),
};

/** Which merchants a list shows: every one, or one program's. */
export interface MerchantFilter {
  programId?: string;
}

function merchantsOf(filter: MerchantFilter) {
  const all = db.selectFrom('merchants');
  return filter.programId === undefined ? all : all.where('program_id', '=', filter.programId);
}

/** One page of records, with how many there are in all. */
export interface Paged<T> {
  count: number;
  data: T[];
}

/** A program (the top-level tenant): id, name, createdAt. */
export type ProgramRecord = RowOf<ReturnType<typeof tenantQueries.findProgram>>;
/** A merchant of a program: id, programId, name, createdAt. */
export type MerchantRecord = RowOf<ReturnType<typeof tenantQueries.findMerchant>>;

export function tenantRepository(pool: DatabasePool) {
  return {
    async createProgram(input: { id: string; name: string }): Promise<ProgramRecord> {
      try {
        return (await run(pool, tenantQueries.createProgram(input))).rows[0]!;
      } catch (error) {
        throw isUniqueViolation(error) ? new DuplicateIdError('program', input.id) : error;
      }
    },

    /** Creates a merchant; its program must exist (a foreign key refuses it otherwise). */
    async createMerchant(input: { id: string; programId: string; name: string }): Promise<MerchantRecord> {
      try {
        return (await run(pool, tenantQueries.createMerchant(input))).rows[0]!;
      } catch (error) {
        throw isUniqueViolation(error) ? new DuplicateIdError('merchant', input.id) : error;
      }
    },

    async findProgram(id: string): Promise<ProgramRecord | null> {
      return (await run(pool, tenantQueries.findProgram(id))).rows[0] ?? null;
    },

    async findMerchant(id: string): Promise<MerchantRecord | null> {
      return (await run(pool, tenantQueries.findMerchant(id))).rows[0] ?? null;
    },

    /** One page of programs, oldest first. */
    async listPrograms(page: number, pageSize: number): Promise<Paged<ProgramRecord>> {
      const [{ rows }, counted] = await Promise.all([
        run(pool, tenantQueries.programPage(pageSize, (page - 1) * pageSize)),
        run(pool, tenantQueries.programCount()),
      ]);
      return { count: Number(counted.rows[0]?.count ?? 0), data: rows };
    },

    /** One page of merchants (of one program, when the filter names it), oldest first. */
    async listMerchants(filter: MerchantFilter, page: number, pageSize: number): Promise<Paged<MerchantRecord>> {
      const [{ rows }, counted] = await Promise.all([
        run(pool, tenantQueries.merchantPage(filter, pageSize, (page - 1) * pageSize)),
        run(pool, tenantQueries.merchantCount(filter)),
      ]);
      return { count: Number(counted.rows[0]?.count ?? 0), data: rows };
    },
  };
}

export type TenantRepository = ReturnType<typeof tenantRepository>;
