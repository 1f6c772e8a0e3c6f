import type { Server } from 'node:net';
import { HeraldError } from '@herald/domain';

/** Where a process's listener binds, and the settings a person changes when it cannot. */
export interface ListenOptions {
  readonly port: number;
  /** The address; undefined for every interface. */
  readonly host: string | undefined;
  /** The variable holding the port (`PORT`, `METRICS_PORT`), named when the port is the problem. */
  readonly portSetting: string;
  /**
   * When the port is taken, how many of the ports above it to try before giving up. Default 0: a
   * taken port is an error (a scraper or a load balancer looks for the process on that port).
   */
  readonly nextPortsToTry?: number;
}

/** Thrown when a listener cannot bind; the message names the setting to change and how. */
class ListenError extends HeraldError {
  override readonly name = 'ListenError';
  readonly code = 'listen_failed';

  constructor(
    message: string,
    /** The variable to change (`HOST`, `PORT`, `METRICS_PORT`). */
    readonly setting: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * Binds `server` and resolves with the port it listens on. Node's own errors say only
 * `listen EADDRINUSE :::9464`; this one says which setting holds the port or the address and what to
 * set it to, since the person reading it did not type the port into any command.
 */
export async function listenOn(server: Server, options: ListenOptions): Promise<number> {
  const { host, nextPortsToTry = 0 } = options;
  let port = options.port;
  for (;;) {
    try {
      await bind(server, port, host);
      const address = server.address();
      return typeof address === 'object' && address !== null ? address.port : port;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE' && port !== 0 && port < options.port + nextPortsToTry && port < 65_535) {
        port += 1;
        continue;
      }
      throw listenError(error as NodeJS.ErrnoException, { ...options, port });
    }
  }
}

function bind(server: Server, port: number, host: string | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

function listenError(error: NodeJS.ErrnoException, { port, host, portSetting, nextPortsToTry = 0 }: ListenOptions): ListenError {
  const where = `${host ?? 'every interface'} port ${port}`;
  switch (error.code) {
    case 'EADDRINUSE': {
      const tried = nextPortsToTry > 0 ? ` (and the ${nextPortsToTry} ports below it)` : '';
      return new ListenError(
        `cannot listen on ${where}: the port is in use by another process${tried}. Set ${portSetting} to a free port (0 takes any free port), or stop the other process`,
        portSetting,
        { cause: error },
      );
    }
    case 'EACCES':
      return new ListenError(
        `cannot listen on ${where}: ports below 1024 need privileges this process lacks. Set ${portSetting} to a port from 1024 to 65535`,
        portSetting,
        { cause: error },
      );
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new ListenError(
        `cannot listen on ${where}: HOST is not an address of this machine. Set HOST to one of its addresses (127.0.0.1 for this machine only, 0.0.0.0 for every interface)`,
        'HOST',
        { cause: error },
      );
    default:
      return new ListenError(`cannot listen on ${where}: ${error.message}. Check HOST and ${portSetting}`, portSetting, { cause: error });
  }
}
