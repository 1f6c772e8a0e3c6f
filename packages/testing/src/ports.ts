import { connect, createServer } from 'node:net';

/** A TCP port on 127.0.0.1 that nothing listens on (at the moment of the call). */
export async function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Whether anything accepts a TCP connection on `host`:`port` (false when it is refused). */
export async function acceptsConnections(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNREFUSED' ? resolve(false) : reject(error)));
  });
}

/**
 * Holds `port` on `host` (0: a free one) so that a process under test finds it taken; a port that
 * another process holds already counts as held. `release()` frees it if this test took it.
 */
export async function holdPort(host: string, port = 0): Promise<{ port: number; release: () => Promise<void> }> {
  const server = createServer();
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' && port !== 0 ? resolve({ port, release: async () => undefined }) : reject(error),
    );
    server.listen(port, host, () => {
      const address = server.address();
      if (typeof address !== 'object' || !address) return reject(new Error('no port'));
      resolve({ port: address.port, release: () => new Promise<void>((done) => server.close(() => done())) });
    });
  });
}
