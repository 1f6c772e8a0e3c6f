import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { HttpServerConfig } from '@herald/config';
import { addressKey } from '@herald/lifecycle';

/**
 * Keeps a flood of connections from closing the server to everyone. Node's own `maxConnections`
 * refuses every newcomer once the cap is full, so clients that connect, send part of a request and
 * wait (no credentials needed) could hold the cap from a single machine. Instead:
 * - one address (an IPv6 /64) holds at most `maxConnectionsPerAddress`; more are closed on arrival;
 * - at the overall cap, a newcomer takes the place of the connection that has waited longest with
 *   no request being answered (one still sending its headers, or an idle keep-alive), so a
 *   flood spread over many addresses still cannot shut out a new client; only when every
 *   connection is busy answering a request is the newcomer closed.
 */
export function guardConnections(server: Server, limits: Pick<HttpServerConfig, 'maxConnections' | 'maxConnectionsPerAddress'>): void {
  // Every open connection, in the order it last became idle (arrived, or finished its last
  // answer), with how many of its requests are being answered now (pipelined ones count each).
  const open = new Map<Socket, { address: string; answering: number }>();
  const perAddress = new Map<string, number>();

  /** Stops counting `socket`; idempotent, since a closed-to-make-room socket reports its close later. */
  const forget = (socket: Socket): void => {
    const state = open.get(socket);
    if (!state) return;
    open.delete(socket);
    const left = (perAddress.get(state.address) ?? 1) - 1;
    if (left === 0) perAddress.delete(state.address);
    else perAddress.set(state.address, left);
  };

  const closeLongestIdle = (): boolean => {
    for (const [socket, state] of open) {
      if (state.answering > 0) continue;
      forget(socket);
      socket.destroy();
      return true;
    }
    return false;
  };

  server.on('connection', (socket: Socket) => {
    const address = addressKey(socket.remoteAddress);
    const fromAddress = perAddress.get(address) ?? 0;
    if (fromAddress >= limits.maxConnectionsPerAddress || (open.size >= limits.maxConnections && !closeLongestIdle())) {
      socket.destroy();
      return;
    }
    open.set(socket, { address, answering: 0 });
    perAddress.set(address, fromAddress + 1);
    socket.once('close', () => forget(socket));
  });

  server.on('request', (req, res) => {
    const socket = req.socket;
    const state = open.get(socket);
    if (!state) return;
    state.answering += 1;
    res.once('close', () => {
      state.answering -= 1;
      // Idle again from now: to the back of the line of connections that may make room.
      if (state.answering === 0 && open.delete(socket)) open.set(socket, state);
    });
  });
}
