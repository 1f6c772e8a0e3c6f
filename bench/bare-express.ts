/**
 * The ceiling of GET /events: a bare Express 5 app answering one static page (the bytes of a real
 * page 1, read from BENCH_PAGE_FILE), in its own process like the events-api, on a server that makes
 * its requests with the app's prototypes as the events-api's does.
 * Prints `{"message":"listening","port":N}` on stdout once listening.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import express from 'express';
import { withAppPrototypes } from '@herald/events-api';

const page = readFileSync(process.env.BENCH_PAGE_FILE ?? '', 'utf8');
const app = express();
app.get('/events', (_req, res) => {
  res.type('application/json').send(page);
});
// Served as the events-api serves: requests made with the app's prototypes (withAppPrototypes).
const server = createServer(withAppPrototypes(app), app).listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ message: 'listening', port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
