import type { HttpRecorder } from '@herald/testing';
import { issueTokens } from './support/tokens';
import { useHttpRecorders, useWorlds } from './support/world';

// Targets are stored straight through the repository here, as if their URLs had passed the
// events-api's check when they were set and their hosts resolved elsewhere since (DNS rebinding).

const world = useWorlds();
const server = useHttpRecorders();

const port = (recorder: HttpRecorder) => new URL(recorder.origin).port;

describe('the address check at send time, when private targets are not allowed', () => {
  it('refuses a target URL whose host is a loopback address, without connecting', async () => {
    const w = world({ ALLOW_PRIVATE_TARGETS: 'false', DELIVERY_ATTEMPTS: '1' });
    const merchant = await server();
    const { programId } = await w.createTarget(`${merchant.origin}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]!.status).toBe('failed');
    const [attempt] = await w.attempts(sent!.deliveryId);
    expect(attempt).toMatchObject({ errorKind: 'address_refused', errorMessage: '127.0.0.1 is a loopback address; private targets are not allowed' });
    expect(merchant.requests).toHaveLength(0);
  });

  it('refuses a host name that resolves to a loopback address when connecting', async () => {
    const w = world({ ALLOW_PRIVATE_TARGETS: 'false', DELIVERY_ATTEMPTS: '1' });
    const merchant = await server();
    const { programId } = await w.createTarget(`http://localhost:${port(merchant)}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]!.status).toBe('failed');
    const [attempt] = await w.attempts(sent!.deliveryId);
    expect(attempt!.errorKind).toBe('address_refused');
    expect(attempt!.errorMessage).toMatch(/^localhost \((127\.0\.0\.1|::1)\) is a loopback address; private targets are not allowed$/);
    expect(merchant.requests).toHaveLength(0);
  });

  it('delivers to a host of TARGET_HOST_ALLOWLIST', async () => {
    const w = world({ ALLOW_PRIVATE_TARGETS: 'false', TARGET_HOST_ALLOWLIST: 'localhost' });
    const merchant = await server();
    const { programId } = await w.createTarget(`http://localhost:${port(merchant)}/hook`);
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]!.status).toBe('succeeded');
    expect(merchant.requests).toHaveLength(1);
  });

  it('refuses an OAuth Authentication URL that resolves to a loopback address, without sending the credentials', async () => {
    const w = world({ ALLOW_PRIVATE_TARGETS: 'false', TARGET_HOST_ALLOWLIST: '127.0.0.1', DELIVERY_ATTEMPTS: '1' });
    const merchant = await server();
    const tokens = await server(issueTokens());
    const { programId } = await w.createTarget(`${merchant.origin}/hook`, {
      mode: 'oauth',
      authUrl: `http://localhost:${port(tokens)}/oauth/token`,
      username: 'client',
      password: 'secret',
    });
    w.startWorker();
    const [sent] = await w.sendEvents(programId);

    expect((await w.settled([sent!.deliveryId]))[0]!.status).toBe('failed');
    const [attempt] = await w.attempts(sent!.deliveryId);
    expect(attempt!.errorKind).toBe('address_refused');
    expect(tokens.requests).toHaveLength(0);
    expect(merchant.requests).toHaveLength(0);
  });
});
