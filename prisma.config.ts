import { defineConfig } from 'prisma/config';
import { loadDatabaseConfig } from './packages/config/src/index';

// Prisma's CLI reads the database URL from here. Offline, only `prisma generate` is used; migrations
// are applied by `pnpm db:migrate` (see docs/operations.md, "Migrations").
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: loadDatabaseConfig().databaseUrl },
});
