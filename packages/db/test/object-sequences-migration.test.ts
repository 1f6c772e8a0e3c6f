import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { applyMigrations } from '../src/migrations';
import { useScratch } from './support/scratch';

const MIGRATION = '20261128015653_object_sequences';

describe(`migration ${MIGRATION}`, () => {
  const scratch = useScratch();

  it("numbers the events stored before it per object, by when they were stored, then createdAt, then id, and keeps each object's last number", async () => {
    const url = await scratch.database();
    await applyMigrations(url, scratch.repositoryMigrationsUpTo(MIGRATION, { including: false }));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query("INSERT INTO programs (id, name) VALUES ('p', 'Program')");
      await client.query("INSERT INTO merchants (id, program_id, name) VALUES ('m', 'p', 'Merchant')");
      // [id, merchant, objectId, createdAt, ingestedAt]: o-1 of the merchant thrice (two in one
      // batch, told apart by createdAt), o-1 of the program itself once, o-2 once.
      const rows: Array<[string, string | null, string, string, string]> = [
        ['Event-c', 'm', 'o-1', '2026-11-03T00:00:00Z', '2026-11-20T00:00:00Z'],
        ['Event-a', 'm', 'o-1', '2026-11-02T00:00:00Z', '2026-11-10T00:00:00Z'],
        ['Event-b', 'm', 'o-1', '2026-11-01T00:00:00Z', '2026-11-10T00:00:00Z'],
        ['Event-d', null, 'o-1', '2026-11-01T00:00:00Z', '2026-11-11T00:00:00Z'],
        ['Event-e', 'm', 'o-2', '2026-11-01T00:00:00Z', '2026-11-12T00:00:00Z'],
      ];
      for (const [id, merchantId, objectId, createdAt, ingestedAt] of rows) {
        await client.query(
          "INSERT INTO events (id, program_id, merchant_id, created_at, origin, event_type, object_id, object_type, content_hash, ingested_at) VALUES ($1, 'p', $2, $3, 'api', 'updated', $4, 'payment', $5, $6)",
          [id, merchantId, createdAt, objectId, randomUUID(), ingestedAt],
        );
      }

      await applyMigrations(url, scratch.repositoryMigrationsUpTo(MIGRATION, { including: true }));

      expect((await client.query('SELECT id, sequence FROM events ORDER BY id')).rows).toEqual([
        { id: 'Event-a', sequence: 2 },
        { id: 'Event-b', sequence: 1 },
        { id: 'Event-c', sequence: 3 },
        { id: 'Event-d', sequence: 1 },
        { id: 'Event-e', sequence: 1 },
      ]);
      expect((await client.query('SELECT merchant_id, object_id, last_sequence FROM object_sequences ORDER BY merchant_id, object_id')).rows).toEqual([
        { merchant_id: '', object_id: 'o-1', last_sequence: 1 },
        { merchant_id: 'm', object_id: 'o-1', last_sequence: 3 },
        { merchant_id: 'm', object_id: 'o-2', last_sequence: 1 },
      ]);
      await expect(client.query("UPDATE events SET sequence = NULL WHERE id = 'Event-a'")).rejects.toThrow(/not-null/);
    } finally {
      await client.end();
    }
  });
});
