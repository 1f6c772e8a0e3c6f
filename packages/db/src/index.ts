export { createPrismaClient, PrismaClient } from './client';
export type { Prisma, PrismaClientOptions } from './client';
export { ensureDatabase, dropDatabase, quoteIdentifier } from './database';
export { applyMigrations, readMigrations, MIGRATIONS_DIR, MigrationError } from './migrations';
export type { Migration, MigrationResult } from './migrations';
