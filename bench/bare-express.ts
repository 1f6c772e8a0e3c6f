/**
 * The ceiling of GET /events: a bare Express 5 app answering one static page (the bytes of a real
 * page 1, read from BENCH_PAGE_FILE), in its own process like the events-api.
 * Prints `{"message":"listening","port":N}` on stdout once listening.
 */
import { readFileSync } from 'node:fs';
import express from 'express';

const page = readFileSync(process.env.BENCH_PAGE_FILE ?? '', 'utf8');
const app = express();
app.get('/events', (_req, res) => {
  res.type('application/json').send(page);
});
const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ message: 'listening', port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
