import { maskQueryValues } from '../src';

describe('maskQueryValues', () => {
  it('replaces every query value with *** and keeps the names', () => {
    expect(maskQueryValues('https://shop.example/hooks?token=s3cr3t&shop=42')).toBe('https://shop.example/hooks?token=***&shop=***');
  });

  it('masks a bare parameter (it may be a token) and keeps empty values and separators as they were', () => {
    expect(maskQueryValues('https://shop.example/h?abcdef0123&empty=&&x=%2F%3D')).toBe('https://shop.example/h?***&empty=&&x=***');
  });

  it('leaves a URL without a query as it is, and drops the fragment, which is never sent', () => {
    expect(maskQueryValues('https://shop.example:8443/hooks/v1')).toBe('https://shop.example:8443/hooks/v1');
    expect(maskQueryValues('https://shop.example/h?key=v#frag?x=1')).toBe('https://shop.example/h?key=***');
    expect(maskQueryValues('https://shop.example/h#frag?x=1')).toBe('https://shop.example/h');
  });

  it('masks a value that holds = signs whole', () => {
    expect(maskQueryValues('http://127.0.0.1/cb?sig=YWJj==')).toBe('http://127.0.0.1/cb?sig=***');
  });
});
