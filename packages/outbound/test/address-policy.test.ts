import { firstRefusedAddress, refusedAddressKind } from '../src';

describe('the address policy', () => {
  it.each([
    ['127.0.0.1', 'a loopback'],
    ['10.0.0.1', 'a private'],
    ['169.254.169.254', 'a cloud metadata'],
    ['169.254.1.1', 'a link-local'],
    ['100.64.0.1', 'a shared (CGNAT)'],
    ['0.0.0.0', 'an unspecified'],
    ['255.255.255.255', 'a reserved'],
    ['224.0.0.1', 'a reserved'],
    ['192.0.2.1', 'a reserved'],
    ['::1', 'a loopback'],
    ['::', 'an unspecified'],
    ['fd00:ec2::254', 'a cloud metadata'],
    ['fc00::1', 'a private'],
    ['fe80::1', 'a link-local'],
    ['fe80::1%eth0', 'a link-local'],
    ['ff02::1', 'a reserved'],
    ['::7f00:1', 'a reserved'],
    ['64:ff9b:1::a00:1', 'a reserved'],
    ['2001:db8::1', 'a reserved'],
    // Forms that embed an IPv4 address: the embedded address decides.
    ['::ffff:127.0.0.1', 'a loopback'],
    ['::ffff:a00:1', 'a private'],
    ['::ffff:0:127.0.0.1', 'a loopback'],
    ['::ffff:0:a9fe:a9fe', 'a cloud metadata'],
    ['64:ff9b::a9fe:a9fe', 'a cloud metadata'],
    ['2002:7f00:1::', 'a loopback'],
    ['2002:a00:1::1', 'a private'],
    // Teredo: the server address in clear, the client address with every bit inverted.
    ['2001:0:7f00:1::', 'a loopback'],
    ['2001:0:5db8:d822::f5ff:fff5', 'a private'],
    // Deprecated site-local addresses (RFC 3879) are still routed inside some networks.
    ['fec0::1', 'a site-local'],
    ['feff::1', 'a site-local'],
  ])('refuses %s as %s address', (address, kind) => {
    expect(refusedAddressKind(address)).toBe(kind);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '2606:2800:220:1::1',
    '::ffff:93.184.216.34',
    '::ffff:0:93.184.216.34',
    '64:ff9b::5db8:d822',
    '2002:5db8:d822::1',
    '2001:0:5db8:d822::a247:27dd',
  ])('accepts the public address %s', (address) => {
    expect(refusedAddressKind(address)).toBeUndefined();
  });

  it('refuses what is not an IP address at all, rather than guessing', () => {
    expect(refusedAddressKind('not-an-address')).toBe('an unrecognised');
  });

  it('names the first refused address of a list', () => {
    expect(firstRefusedAddress(['93.184.216.34', '2002:7f00:1::', '10.0.0.1'])).toEqual({ address: '2002:7f00:1::', kind: 'a loopback' });
    expect(firstRefusedAddress(['93.184.216.34'])).toBeUndefined();
  });
});
