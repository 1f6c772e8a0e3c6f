import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import express from 'express';
import { createHttpServer } from '../src/http/http-server';

// Requests Node's parser refuses before Express sees them still get a problem+json answer.
describe('createHttpServer', () => {
  const server = createHttpServer(express().get('/', (_req, res) => res.send('ok')));
  let port: number;

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  /** Writes `request` as raw bytes and reads the whole answer (the server closes the connection). */
  function exchange(request: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end(request));
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (answer += chunk));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
  }

  function parse(answer: string): { status: number; headers: string; body: Record<string, unknown> } {
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(body) as Record<string, unknown> };
  }

  it('answers headers over 16 KiB with a 431 problem+json', async () => {
    const answer = parse(await exchange(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
    expect(answer.status).toBe(431);
    expect(answer.headers).toContain('content-type: application/problem+json');
    expect(answer.body).toMatchObject({ status: 431, type: '/problems/headers_too_large' });
  });

  it('answers a broken request line with a 400 problem+json', async () => {
    const answer = parse(await exchange('NOT HTTP AT ALL\r\n\r\n'));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ status: 400, type: '/problems/malformed_request', title: 'Bad Request' });
  });

  it('serves well-formed requests as usual', async () => {
    const answer = await exchange('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });
});
