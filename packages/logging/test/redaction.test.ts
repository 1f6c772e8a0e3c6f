import { PassThrough } from 'node:stream';
import { createLogger, redact, redactForeignText } from '../src';

function captureLogger() {
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  const logger = createLogger({ level: 'debug', service: 'test', stream });
  return { logger, output: () => lines.join('\n'), lines };
}

describe('the logger', () => {
  it('writes one JSON line per entry with the service name', () => {
    const { logger, lines } = captureLogger();
    logger.info('hello', { deliveryId: 'd1' });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'info', message: 'hello', service: 'test', deliveryId: 'd1' });
  });

  it('drops entries below its level before formatting them, and follows a level changed later', () => {
    const stream = new PassThrough();
    const lines: string[] = [];
    stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    const logger = createLogger({ level: 'info', service: 'test', stream });
    let formatted = 0;
    // A nested property: winston copies the entry's top level, the redaction format reads inside.
    const meta = {
      target: Object.defineProperty({}, 'url', {
        enumerable: true,
        get: () => {
          formatted += 1;
          return String(formatted);
        },
      }),
    };
    logger.http('callback delivered', meta);
    expect(lines).toEqual([]);
    expect(formatted).toBe(0);
    logger.level = 'http';
    logger.http('callback delivered', { deliveryId: 'd2' });
    expect(lines.map((line) => JSON.parse(line).deliveryId)).toEqual(['d2']);
  });

  it('never writes known secrets, whether as fields, nested, in headers or inside text', () => {
    const { logger, output } = captureLogger();
    const secrets = ['hunter2-password', 'tok-abc.def', 'key_live_123456', 'czNjcjN0'];
    logger.warn('callback failed', {
      target: { auth: { username: 'merchant', password: 'hunter2-password' } },
      headers: { Authorization: 'Bearer tok-abc.def', 'x-api-key': 'key_live_123456' },
      accessToken: 'tok-abc.def',
    });
    logger.error('upstream said Authorization: Basic czNjcjN0 was wrong');
    logger.error('fetch https://merchant:hunter2-password@auth.example/token failed');
    const text = output();
    for (const secret of secrets) expect(text).not.toContain(secret);
    expect(text).toContain('[REDACTED]');
    expect(text).toContain('merchant');
  });

  it('keeps the fields that are not secret', () => {
    const { logger, lines } = captureLogger();
    logger.info('attempt', { eventId: 'Event-1', statusCode: 500 });
    expect(JSON.parse(lines[0]!)).toMatchObject({ eventId: 'Event-1', statusCode: 500 });
  });
});

describe('redact', () => {
  it('does not change the object it is given', () => {
    const input = { password: 'p', nested: { token: 't' } };
    redact(input);
    expect(input).toEqual({ password: 'p', nested: { token: 't' } });
  });

  it('reduces errors to name and redacted message', () => {
    expect(redact(new TypeError('Bearer abc failed'))).toEqual({ name: 'TypeError', message: 'Bearer [REDACTED] failed' });
  });
});

describe('redactForeignText', () => {
  it('applies the log rules to free text and to the JSON members it holds, keeping the rest byte for byte', () => {
    const text = '{"error": "down", "headers": {"authorization": "Basic dXNlcjpwdw==", "x-api-key": "k-123"}, "note": "Bearer abc.def"}';
    expect(redactForeignText(text)).toBe(
      '{"error": "down", "headers": {"authorization": "Basic [REDACTED]", "x-api-key": "[REDACTED]"}, "note": "Bearer [REDACTED]"}',
    );
  });

  it("masks a known secret's beginning at the end of a text that may be cut off, but not at the end of a whole value", () => {
    expect(redactForeignText('error invalid_client', ['client-secret'])).toBe('error invalid_[REDACTED]');
    expect(redactForeignText('error invalid_client', ['client-secret'], { mayBeCutOff: false })).toBe('error invalid_client');
    expect(redactForeignText('got client-secret', ['client-secret'], { mayBeCutOff: false })).toBe('got [REDACTED]');
  });

  it('masks known secrets as sent, JSON-escaped and percent-encoded', () => {
    const secret = 'p"a ss/word';
    const text = `raw ${secret} json ${JSON.stringify(secret)} url ${encodeURIComponent(secret)}`;
    expect(redactForeignText(text, [secret])).toBe('raw [REDACTED] json "[REDACTED]" url [REDACTED]');
  });

  it('masks known secrets HTML-escaped, as Go escapes JSON, in base64 and in hex, as merchants echo them', () => {
    const secret = `p<a>s&s"w'rd`;
    const bytes = Buffer.from(secret, 'utf8');
    const echoes = [
      'p&lt;a&gt;s&amp;s&quot;w&#39;rd',
      'p&lt;a&gt;s&amp;s&#34;w&#39;rd',
      'p&lt;a&gt;s&amp;s&quot;w&#x27;rd',
      'p\\u003ca\\u003es\\u0026s\\"w\'rd',
      bytes.toString('base64'),
      bytes.toString('base64url'),
      bytes.toString('hex'),
      bytes.toString('hex').toUpperCase(),
    ];
    for (const echo of echoes) expect(redactForeignText(`echo: ${echo} .`, [secret])).toBe('echo: [REDACTED] .');
  });

  it("masks a known secret's beginning where the text breaks off, and leaves short look-alikes alone", () => {
    expect(redactForeignText('echo: s3cr', ['s3cret-value'])).toBe('echo: [REDACTED]');
    expect(redactForeignText('echo: s3c', ['s3cret-value'])).toBe('echo: s3c');
  });

  it('finds a member of a body too deep for the logger or no longer valid JSON', () => {
    const deep = `${'{"a":'.repeat(20)}{"password":"hunter2"}${'}'.repeat(20)}`;
    expect(redactForeignText(deep)).not.toContain('hunter2');
    expect(redactForeignText('{"token":"abc","rest":"cut of')).toBe('{"token":"[REDACTED]","rest":"cut of');
  });
});
