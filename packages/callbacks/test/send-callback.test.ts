import { NoAuthStrategy, type CallbackAuthStrategy } from '@herald/callback-auth';
import { createConnectGuard, createOutboundClient } from '@herald/outbound';
import { always, closedPort, inTurn, startHttpRecorder, type HttpRecorder } from '@herald/testing';
import { createCallbackSender, sendCallback, testCallbackMessage, TEST_CALLBACK_HEADER, type CallbackMessage } from '../src';

const send = createCallbackSender({
  timeoutMs: 2_000,
  responseMaxBytes: 64,
  outbound: createOutboundClient({ guard: createConnectGuard({ allowPrivate: true, hostAllowlist: [] }) }),
});

let receiver: HttpRecorder | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

/** An OAuth-like strategy handing out token-1, then token-2 after an invalidate. */
function rotatingTokens(): CallbackAuthStrategy & { invalidated: number } {
  let current = 1;
  return {
    mode: 'oauth',
    invalidated: 0,
    async headers() {
      return { authorization: `Bearer token-${current}` };
    },
    async invalidate() {
      this.invalidated += 1;
      current += 1;
    },
  };
}

const message = (url: string): CallbackMessage => ({
  url,
  webhookId: 'Event-1',
  body: '{"id":"Event-1"}',
  extraHeaders: { 'webhook-id': 'forged', 'x-extra': '1' },
});

describe('sendCallback', () => {
  it('posts the body with the callback headers, which extra headers cannot replace', async () => {
    receiver = await startHttpRecorder(always({ status: 200, body: 'ok' }));
    const result = await sendCallback(message(`${receiver.origin}/hook`), { auth: new NoAuthStrategy(), send, knownSecrets: [] });
    expect(result).toEqual({ delivered: true, statusCode: 200, responseBody: 'ok' });
    const [request] = receiver.requests;
    expect(request!.body).toBe('{"id":"Event-1"}');
    expect(request!.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': 'Event-1',
      'x-extra': '1',
      'webhook-timestamp': expect.stringMatching(/^\d+$/),
    });
  });

  it('answers an OAuth 401 with one more POST carrying a fresh token, and masks what the merchant echoes', async () => {
    receiver = await startHttpRecorder(inTurn({ status: 401 }, { status: 500, body: 'got Bearer token-2 and pa55word' }));
    const auth = rotatingTokens();
    const result = await sendCallback(message(`${receiver.origin}/hook`), { auth, send, knownSecrets: ['pa55word'] });
    expect(receiver.requests.map((r) => r.headers.authorization)).toEqual(['Bearer token-1', 'Bearer token-2']);
    expect(auth.invalidated).toBe(1);
    expect(result).toMatchObject({ delivered: false, errorKind: 'http_status', statusCode: 500 });
    expect(result.responseBody).not.toContain('token-2');
    expect(result.responseBody).not.toContain('pa55word');
  });

  it('never throws: a refused connection is a connection failure', async () => {
    const result = await sendCallback(message(`http://127.0.0.1:${await closedPort()}/hook`), { auth: new NoAuthStrategy(), send, knownSecrets: [] });
    expect(result).toEqual({ delivered: false, errorKind: 'connection', errorMessage: 'the connection failed (ECONNREFUSED)', retryable: true });
  });
});

describe('testCallbackMessage', () => {
  it('is marked by its header and its body, with an id of its own that no event has', async () => {
    receiver = await startHttpRecorder(always({ status: 200 }));
    const test = testCallbackMessage(`${receiver.origin}/hook`, [], new Date('2026-11-23T10:00:00.000Z'));
    await sendCallback(test, { auth: new NoAuthStrategy(), send, knownSecrets: [] });
    const [request] = receiver.requests;
    expect(request!.headers[TEST_CALLBACK_HEADER]).toBe('true');
    expect(test.webhookId).toMatch(/^Test-[0-9a-f-]{36}$/);
    expect(request!.headers['webhook-id']).toBe(test.webhookId);
    expect(JSON.parse(request!.body)).toEqual({
      type: 'herald.test',
      test: true,
      id: test.webhookId,
      createdAt: '2026-11-23T10:00:00.000Z',
      description: expect.any(String),
    });
  });
});
