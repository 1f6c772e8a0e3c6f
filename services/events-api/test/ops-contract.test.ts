import express from 'express';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { opsEndpoints } from '@herald/lifecycle';
import { createLogger } from '@herald/logging';
import { describeOpsContract } from '@herald/testing';
import { errorHandler, notFound } from '../src/http/error-handler';
import { plainRouter } from '../src/http/plain-adapter';

const logger = createLogger({ level: 'error', service: 'test', stream: new PassThrough() });

// Mounted as app.ts mounts it, with the app's own 404 and error handling behind it.
describeOpsContract("the events-api's Express app", async (options) => {
  const app = express();
  app.use(plainRouter(opsEndpoints(options)));
  app.use(notFound);
  app.use(errorHandler(logger));
  const server = await new Promise<ReturnType<typeof app.listen>>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      }),
  };
});
