import { eventRepository } from '@herald/db';
import type { HttpRecorder, RecordedRequest } from '@herald/testing';
import rootPackage from '../../../package.json';
import { issueTokens } from './support/tokens';
import { useHttpRecorders, useWorlds, type SentEvent, type World } from './support/world';

const world = useWorlds();
const server = useHttpRecorders();

/** Sends one event through a worker and returns it with the one request the receiver got. */
async function deliverOne(w: World, programId: string, receiver: HttpRecorder): Promise<{ sent: SentEvent; before: number; after: number }> {
  w.startWorker();
  const before = Math.floor(Date.now() / 1000);
  const [sent] = await w.sendEvents(programId);
  const [row] = await w.settled([sent!.deliveryId]);
  expect(row!.status).toBe('succeeded');
  expect(receiver.requests).toHaveLength(1);
  return { sent: sent!, before, after: Math.ceil(Date.now() / 1000) };
}

/** The headers every callback carries whatever the auth mode, checked on what the receiver got. */
function expectCallbackHeaders(request: RecordedRequest, sent: SentEvent, before: number, after: number): void {
  expect(request.method).toBe('POST');
  expect(request.headers['content-type']).toBe('application/json');
  expect(request.headers['user-agent']).toBe(`Herald/${rootPackage.version}`);
  expect(request.headers['webhook-id']).toBe(sent.event.id);
  const timestamp = Number(request.headers['webhook-timestamp']);
  expect(String(timestamp)).toBe(request.headers['webhook-timestamp']);
  expect(timestamp).toBeGreaterThanOrEqual(before);
  expect(timestamp).toBeLessThanOrEqual(after);
}

describe('a callback as the merchant receives it', () => {
  it('is one POST of the event exactly as GET /events returns it, to the target URL with its query', async () => {
    const w = world();
    const receiver = await server();
    const { programId } = await w.createTarget(`${receiver.origin}/hooks/herald?shop=42&sig=a%2Fb`);
    const { sent } = await deliverOne(w, programId, receiver);

    const [request] = receiver.requests;
    expect(request!.url).toBe('/hooks/herald?shop=42&sig=a%2Fb');
    const listed = await eventRepository(w.pool).list({ scope: { kind: 'program', programId }, page: 1, pageSize: 10 });
    // Byte for byte: the page of this one event is its callback's body in brackets.
    expect(listed.eventsJson).toBe(`[${request!.body}]`);
    expect(JSON.parse(request!.body)).toEqual(sent.event);
  });

  it('carries no Authorization header when the target uses no authentication', async () => {
    const w = world();
    const receiver = await server();
    const { programId } = await w.createTarget(`${receiver.origin}/hook`);
    const { sent, before, after } = await deliverOne(w, programId, receiver);

    const [request] = receiver.requests;
    expectCallbackHeaders(request!, sent, before, after);
    expect(request!.headers.authorization).toBeUndefined();
  });

  it('carries Authorization: Basic base64(username:password) when the target uses basic authentication', async () => {
    const w = world();
    const receiver = await server();
    const { programId } = await w.createTarget(`${receiver.origin}/hook`, { mode: 'basic', username: 'shop-7', password: 'pä$$:word' });
    const { sent, before, after } = await deliverOne(w, programId, receiver);

    const [request] = receiver.requests;
    expectCallbackHeaders(request!, sent, before, after);
    expect(request!.headers.authorization).toBe(`Basic ${Buffer.from('shop-7:pä$$:word', 'utf8').toString('base64')}`);
  });

  it('fetches a token exactly as the spec asks and sends the callback with Authorization: Bearer <token>', async () => {
    const w = world();
    const receiver = await server();
    const tokens = await server(issueTokens());
    const { programId } = await w.createTarget(`${receiver.origin}/hook`, {
      mode: 'oauth',
      authUrl: `${tokens.origin}/oauth/token`,
      username: 'client-7',
      password: 's3cret!',
    });
    const { sent, before, after } = await deliverOne(w, programId, receiver);

    expect(tokens.requests).toHaveLength(1);
    const [tokenRequest] = tokens.requests;
    expect(tokenRequest!.method).toBe('POST');
    expect(tokenRequest!.url).toBe('/oauth/token?grant_type=client_credentials');
    expect(tokenRequest!.headers['content-type']).toBe('application/json');
    expect(tokenRequest!.headers.authorization).toBe(`Basic ${Buffer.from('client-7:s3cret!').toString('base64')}`);
    expect(JSON.parse(tokenRequest!.body)).toEqual({ grant_type: 'client_credentials', username: 'client-7', password: 's3cret!' });

    const [request] = receiver.requests;
    expectCallbackHeaders(request!, sent, before, after);
    expect(request!.headers.authorization).toBe('Bearer token-1');
  });
});
