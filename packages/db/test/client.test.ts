import { testDatabaseUrl } from '@herald/config';
import { createPrismaClient, sqlPool } from '../src/client';

describe('createPrismaClient', () => {
  it('ends its pool on $disconnect even when no Prisma query ever ran', async () => {
    const prisma = createPrismaClient(testDatabaseUrl());
    const pool = sqlPool(prisma);
    await pool.query('SELECT 1');
    await prisma.$disconnect();
    expect(pool.ended).toBe(true);
  });

  it('ends its pool once when Prisma queries ran too', async () => {
    const prisma = createPrismaClient(testDatabaseUrl());
    const pool = sqlPool(prisma);
    await prisma.$queryRaw`SELECT 1`;
    await pool.query('SELECT 1');
    await expect(prisma.$disconnect()).resolves.toBeUndefined();
    expect(pool.ended).toBe(true);
  });
});
