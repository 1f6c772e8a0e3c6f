import { addressKey, createFailedAuthThrottle } from '../src';

describe('createFailedAuthThrottle', () => {
  const options = { perAddress: 2, windowSeconds: 10, maxAddresses: 3 };

  it('refuses an address after perAddress failures until its window ends, with 429 problem+json and Retry-After', () => {
    let clock = 0;
    const throttle = createFailedAuthThrottle({ ...options, now: () => clock });
    throttle.failed('192.0.2.1');
    expect(throttle.refusal('192.0.2.1')).toBeUndefined();
    throttle.failed('192.0.2.1');
    const refused = throttle.refusal('192.0.2.1');
    expect(refused).toMatchObject({ status: 429, headers: { 'Retry-After': '10', 'Content-Type': 'application/problem+json' } });
    expect(JSON.parse(refused!.body)).toEqual({
      type: '/problems/too_many_failed_authentications',
      title: 'Too Many Requests',
      status: 429,
      detail: 'More than 2 failed authentications from this address in 10 s; wait before trying again.',
    });
    expect(throttle.refusal('192.0.2.2')).toBeUndefined();
    clock = 9_001;
    expect(throttle.refusal('192.0.2.1')?.headers['Retry-After']).toBe('1');
    clock = 10_000;
    expect(throttle.refusal('192.0.2.1')).toBeUndefined();
  });

  it('holds at most maxAddresses, and drops expired windows as it goes', () => {
    let clock = 0;
    const throttle = createFailedAuthThrottle({ ...options, now: () => clock });
    for (let i = 0; i < 1_000; i++) throttle.failed(`198.51.100.${i % 256}`);
    expect(throttle.size()).toBe(3);
    clock = 10_000;
    throttle.failed('203.0.113.9');
    expect(throttle.size()).toBe(1);
  });

  it('counts an IPv6 address by its /64 network, and an IPv4-mapped address as IPv4', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe(addressKey('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(addressKey('2001:db8:1:3::1')).not.toBe(addressKey('2001:db8:1:2::1'));
    expect(addressKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    const throttle = createFailedAuthThrottle({ ...options });
    throttle.failed('2001:db8::1');
    throttle.failed('2001:db8::2');
    expect(throttle.refusal('2001:db8::3')?.status).toBe(429);
  });

  it('counts a request whose address is unknown under one key of its own', () => {
    const throttle = createFailedAuthThrottle({ ...options });
    throttle.failed(undefined);
    throttle.failed('not an address');
    expect(throttle.refusal(undefined)?.status).toBe(429);
    expect(throttle.refusal('192.0.2.1')).toBeUndefined();
  });
});
