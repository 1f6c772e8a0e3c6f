import { randomUUID } from 'node:crypto';
import type { CallbackMessage } from './send-callback';

/** The header that marks a test callback, on top of every callback's own headers. */
export const TEST_CALLBACK_HEADER = 'herald-test';

/** What a test callback's body says of itself. */
const TEST_CALLBACK_DESCRIPTION =
  "A test callback sent on an administrator's request to check this endpoint and its authentication. It is not an event: answer HTTP 200 and take no other action.";

/**
 * The body of a test callback, for the document merchants validate callbacks with: what
 * testCallbackMessage sends (its test checks a real one against this schema).
 */
export const testCallbackBodySchema = {
  title: 'TestCallback',
  description: "A test callback, sent on an administrator's request (with the header herald-test: true): not an event. Answer 200, take no other action.",
  type: 'object',
  additionalProperties: false,
  required: ['type', 'test', 'id', 'createdAt', 'description'],
  properties: {
    type: { const: 'herald.test' },
    test: { const: true },
    id: { type: 'string', pattern: '^Test-[0-9a-f-]{36}$', description: "Test-<uuid>: also its webhook-id, never an event's." },
    createdAt: { type: 'string', format: 'date-time' },
    description: { type: 'string', description: "This explanation, for whoever reads the receiver's logs." },
  },
} as const;

/**
 * A test callback to `url`: marked twice, so that a receiver cannot take it for an event whichever
 * it looks at. The header `herald-test: true`; and a body that is no event of the spec (no
 * objectType, no origin), `{"type":"herald.test","test":true,"id":"Test-<uuid>","createdAt":…,"description":…}`.
 * Its webhook-id is its own `Test-<uuid>`, never an event's, so a receiver that drops repeats by
 * webhook-id never confuses the two. Otherwise sent exactly as a callback (same headers, auth,
 * limits, signature).
 */
export function testCallbackMessage(url: string, signingSecrets: readonly string[], now: Date = new Date()): CallbackMessage {
  const id = `Test-${randomUUID()}`;
  return {
    url,
    // Signed as every callback, so the merchant's verification is tested too.
    signingSecrets,
    webhookId: id,
    body: JSON.stringify({ type: 'herald.test', test: true, id, createdAt: now.toISOString(), description: TEST_CALLBACK_DESCRIPTION }),
    extraHeaders: { [TEST_CALLBACK_HEADER]: 'true' },
  };
}
