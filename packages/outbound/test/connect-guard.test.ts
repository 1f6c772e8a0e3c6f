import type { LookupAddress, LookupOptions } from 'node:dns';
import { createConnectGuard, OutboundRequestError, type AddressPolicy } from '../src';

const STRICT: AddressPolicy = { allowPrivate: false, hostAllowlist: [] };

/** A resolver that answers each host with the given addresses. */
function resolver(answers: Record<string, string[]>) {
  return (hostname: string, _options: unknown, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => {
    const addresses = answers[hostname];
    if (!addresses) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };
}

/** Runs the guard's lookup as a connection would. */
function lookup(policy: AddressPolicy, answers: Record<string, string[]>, hostname: string, options: LookupOptions = {}) {
  const guard = createConnectGuard(policy, resolver(answers));
  return new Promise<{ address: string | LookupAddress[]; family?: number }>((resolve, reject) =>
    guard.lookup!(hostname, options, (error, address, family) => (error ? reject(error) : resolve({ address, family }))),
  );
}

describe('the connect guard', () => {
  it('passes the addresses of a public host on, in the form the connection asked for', async () => {
    const answers = { 'shop.example': ['93.184.216.34', '2606:2800:220:1::1'] };
    expect(await lookup(STRICT, answers, 'shop.example')).toEqual({ address: '93.184.216.34', family: 4 });
    expect((await lookup(STRICT, answers, 'shop.example', { all: true })).address).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ]);
  });

  it('refuses a host when any of its addresses is private, naming the host, the address and its kind', async () => {
    const error = await lookup(STRICT, { 'rebound.example': ['93.184.216.34', '169.254.169.254'] }, 'rebound.example').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboundRequestError);
    expect(error).toMatchObject({ kind: 'address_refused', code: 'outbound_request_failed' });
    expect((error as OutboundRequestError).message).toBe('rebound.example (169.254.169.254) is a cloud metadata address; private targets are not allowed');
  });

  it('checks the answer of every lookup, so a host that rebinds to a private address is refused when it does', async () => {
    const answers: Record<string, string[]> = { 'shop.example': ['93.184.216.34'] };
    const guard = createConnectGuard(STRICT, resolver(answers));
    const run = () => new Promise<unknown>((resolve) => guard.lookup!('shop.example', {}, (error) => resolve(error)));
    expect(await run()).toBeNull();
    answers['shop.example'] = ['10.0.0.7'];
    expect(await run()).toMatchObject({ kind: 'address_refused' });
  });

  it('passes resolution errors through', async () => {
    await expect(lookup(STRICT, {}, 'nowhere.example')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('lets hosts of the allowlist resolve to private addresses', async () => {
    expect(await lookup({ allowPrivate: false, hostAllowlist: ['hooks.internal'] }, { 'hooks.internal': ['10.1.2.3'] }, 'hooks.internal')).toEqual({
      address: '10.1.2.3',
      family: 4,
    });
  });

  it('refuses a URL whose host is a private IP address (connections to an address never look it up)', () => {
    const guard = createConnectGuard(STRICT);
    expect(() => guard.checkUrl('http://127.0.0.1:8080/hook')).toThrow('127.0.0.1 is a loopback address; private targets are not allowed');
    expect(() => guard.checkUrl('https://[::ffff:10.0.0.1]/hook')).toThrow(OutboundRequestError);
    expect(() => guard.checkUrl('https://93.184.216.34/hook')).not.toThrow();
    expect(() => guard.checkUrl('https://shop.example/hook')).not.toThrow();
  });

  it('stays out of the way when private targets are allowed', () => {
    const guard = createConnectGuard({ allowPrivate: true, hostAllowlist: [] });
    expect(guard.lookup).toBeUndefined();
    expect(() => guard.checkUrl('http://127.0.0.1/hook')).not.toThrow();
  });
});
