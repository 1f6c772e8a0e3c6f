/**
 * The second ceiling of GET /events: a bare Express 5 app that runs Herald's own page statement
 * (its text and parameters, built by the events repository's code and read from BENCH_QUERY_FILE
 * as `{ "text", "values" }`) with `pg` on DATABASE_URL, as a named prepared statement over a pool
 * of BENCH_POOL_SIZE connections like the events-api's merchant reads, and sends the count and the
 * events' JSON that the statement returns.
 * No authentication, rate limit, validation or mapping: Herald's ratio to this is its own overhead
 * over the database's. Prints `{"message":"listening","port":N}` on stdout once listening.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import express from 'express';
import pg from 'pg';
import { withAppPrototypes } from '@herald/events-api';

const query = JSON.parse(readFileSync(process.env.BENCH_QUERY_FILE ?? '', 'utf8')) as { text: string; values: unknown[] };
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.BENCH_POOL_SIZE ?? 6) });
const app = express();
app.get('/events', async (_req, res) => {
  // One row: the count, and the page's events as the JSON text PostgreSQL wrote.
  const { rows } = await pool.query<{ total: string; events: string }>({ name: 'bench-events-page', text: query.text, values: query.values });
  res.type('json').send(`{"count":${Number(rows[0]?.total ?? 0)},"data":${rows[0]?.events ?? '[]'}}`);
});
// Served as the events-api serves: requests made with the app's prototypes (withAppPrototypes).
const server = createServer(withAppPrototypes(app), app).listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ message: 'listening', port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
