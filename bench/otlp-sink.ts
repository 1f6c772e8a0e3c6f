/**
 * A collector that discards, for the tracing scenario (bench/scenarios/tracing.ts), in its own
 * process: POST /v1/traces (OTLP/HTTP, either encoding) is read whole and answered 200 with an
 * empty export response, GET /stats reports the exports and bytes received.
 * Prints `{"message":"listening","port":N}` on stdout once listening.
 */
import { createServer } from 'node:http';

let exports = 0;
let bytes = 0;

const server = createServer((req, res) => {
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
  });
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/v1/traces') {
      exports += 1;
      bytes += size;
      // An empty ExportTraceServiceResponse, in protobuf (no bytes) or JSON.
      const json = req.headers['content-type'] === 'application/json';
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
    } else if (req.method === 'GET' && req.url === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ exports, bytes }));
    } else {
      res.writeHead(404).end();
    }
  });
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  console.log(JSON.stringify({ message: 'listening', port: typeof address === 'object' && address ? address.port : 0 }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
