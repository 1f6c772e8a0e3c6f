import { Webhook } from 'standardwebhooks';
import {
  isSigningSecret,
  newSigningSecret,
  previousSecretExpiry,
  rotatedSigningSecrets,
  signingSecretsInUse,
  signWebhook,
  standardWebhookHeaders,
} from '../src';

const body = JSON.stringify({ id: 'Event-1', eventType: 'created', note: 'ünï 🎉' });
const now = () => Math.floor(Date.now() / 1000);

describe('newSigningSecret', () => {
  it('makes whsec_ and the Base64 of 32 bytes, different every time', () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(secret);
    expect(isSigningSecret(secret)).toBe(true);
  });
});

describe('standardWebhookHeaders', () => {
  it('signs as the standardwebhooks reference library verifies', () => {
    const secret = newSigningSecret();
    const headers = standardWebhookHeaders({ id: 'Event-1', timestamp: now(), body }, [secret]);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('carries one signature per secret, each verifying on its own', () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    const headers = standardWebhookHeaders({ id: 'Event-2', timestamp: now(), body }, [current, previous]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(current).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(previous).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(newSigningSecret()).verify(body, headers)).toThrow('No matching signature found');
  });

  it('produces a signature the reference library refuses for a body changed by one byte, or another id or timestamp', () => {
    const secret = newSigningSecret();
    const timestamp = now();
    const headers = standardWebhookHeaders({ id: 'Event-3', timestamp, body }, [secret]);
    const webhook = new Webhook(secret);
    expect(() => webhook.verify(body.replace('created', 'createe'), headers)).toThrow('No matching signature found');
    expect(() => webhook.verify(body, { ...headers, 'webhook-id': 'Event-4' })).toThrow('No matching signature found');
    expect(() => webhook.verify(body, { ...headers, 'webhook-timestamp': String(timestamp - 1) })).toThrow('No matching signature found');
  });

  it("matches the HMAC-SHA256 of id.timestamp.body under the secret's decoded bytes (a fixed vector)", () => {
    // Computed independently: printf 'msg_1.1700000000.{"a":1}' | openssl dgst -sha256 -mac HMAC -macopt hexkey:<32 bytes of 0x01> -binary | base64
    const secret = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    expect(signWebhook(secret, { id: 'msg_1', timestamp: 1_700_000_000, body: '{"a":1}' })).toBe('v1,3tN+SMwreJINGaFSPFdhMpE4XGSVaCkC9ee+KquMGGQ=');
  });

  it('refuses to sign without a secret, or with a malformed one', () => {
    expect(() => standardWebhookHeaders({ id: 'x', timestamp: 1, body }, [])).toThrow('at least one secret');
    expect(() => signWebhook('whsec_short', { id: 'x', timestamp: 1, body })).toThrow('whsec_');
  });
});

describe('signingSecretsInUse', () => {
  const secrets = { current: 'whsec_new', previous: 'whsec_old' };
  const graceEndsAt = new Date('2026-11-24T12:00:00Z');

  it('uses the previous secret too until the grace period ends, then the current one alone', () => {
    expect(signingSecretsInUse(secrets, graceEndsAt, new Date('2026-11-24T11:59:59.999Z'))).toEqual(['whsec_new', 'whsec_old']);
    expect(signingSecretsInUse(secrets, graceEndsAt, graceEndsAt)).toEqual(['whsec_new']);
    expect(signingSecretsInUse(secrets, null, new Date(0))).toEqual(['whsec_new']);
    expect(signingSecretsInUse({ current: 'whsec_new' }, graceEndsAt, new Date(0))).toEqual(['whsec_new']);
  });
});

describe('a signing secret rotation', () => {
  const now = new Date('2026-11-27T12:00:00Z');
  const [old, next] = [newSigningSecret(), newSigningSecret()];

  it('keeps the replaced secret signing for the grace period, and no longer', () => {
    const rotated = rotatedSigningSecrets(old, 60, now, next);
    expect(rotated).toEqual({ secrets: { current: next, previous: old }, graceEndsAt: new Date(now.getTime() + 60_000) });
    expect(previousSecretExpiry(rotated.secrets, rotated.graceEndsAt, now)).toEqual(rotated.graceEndsAt);
    expect(signingSecretsInUse(rotated.secrets, rotated.graceEndsAt, new Date(now.getTime() + 59_999))).toEqual([next, old]);
    expect(previousSecretExpiry(rotated.secrets, rotated.graceEndsAt, new Date(now.getTime() + 60_000))).toBeNull();
    expect(signingSecretsInUse(rotated.secrets, rotated.graceEndsAt, new Date(now.getTime() + 60_000))).toEqual([next]);
  });

  it('drops the replaced secret at once without a grace period, or when none could be read', () => {
    expect(rotatedSigningSecrets(old, 0, now, next)).toEqual({ secrets: { current: next }, graceEndsAt: null });
    expect(rotatedSigningSecrets(undefined, 60, now, next)).toEqual({ secrets: { current: next }, graceEndsAt: null });
  });
});
