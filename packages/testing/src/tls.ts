import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A key and a self-signed certificate for 127.0.0.1, made by openssl for this run. */
export function selfSignedCertificate(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(path.join(tmpdir(), 'herald-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An HTTPS server of `startSelfSignedServer`. */
export interface SelfSignedServer {
  /** `https://127.0.0.1:<port>`: append a path. */
  readonly origin: string;
  /** Its certificate (PEM): trusted as a CA, e.g. in a file NODE_EXTRA_CA_CERTS names, it makes the server trusted. */
  readonly cert: Buffer;
  /** Requests that reached the handler: none, for a client that checks certificates. */
  readonly received: number;
  /** Stops the server and drops open connections. */
  close(): Promise<void>;
}

/** An HTTPS server on a free port of 127.0.0.1 with a self-signed certificate, answering 200 "ok". */
export async function startSelfSignedServer(): Promise<SelfSignedServer> {
  let received = 0;
  const certificate = selfSignedCertificate();
  const server = createServer(certificate, (_req, res) => {
    received += 1;
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cert: certificate.cert,
    get received() {
      return received;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
