import { loadApiConfig, testDatabaseUrl } from '@herald/config';
import { closeApiDatabases, createApiDatabases, INGEST_IDLE_IN_TRANSACTION_TIMEOUT_MS } from '../src/databases';

describe("the events-api's database pools", () => {
  it('end an ingest transaction its process leaves idle (it holds the ingest month), and no other', async () => {
    const databases = createApiDatabases({ ...loadApiConfig({ NODE_ENV: 'test' }), databaseUrl: testDatabaseUrl() });
    try {
      const idleLimit = async (pool: (typeof databases)['ingest']) =>
        (await pool.query<{ limit: string }>("SELECT current_setting('idle_in_transaction_session_timeout') AS limit")).rows[0]!.limit;
      expect(await idleLimit(databases.ingest)).toBe(`${INGEST_IDLE_IN_TRANSACTION_TIMEOUT_MS / 1000}s`);
      // The others keep the server's own setting.
      expect(await idleLimit(databases.merchantReads)).not.toBe(await idleLimit(databases.ingest));
      expect(await idleLimit(databases.admin)).not.toBe(await idleLimit(databases.ingest));
    } finally {
      await closeApiDatabases(databases);
    }
  });
});
