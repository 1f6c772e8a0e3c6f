import type { CallbackAuthStrategy } from '@herald/callback-auth';
import { standardWebhookHeaders } from '@herald/domain';
import { redactForeignText } from '@herald/logging';
import { callbackFailure, callbackResult, type CallbackResult } from './callback-result';
import type { CallbackResponse, SendCallback } from './callback-sender';

/** One callback's content: the same on every POST of it. */
export interface CallbackMessage {
  /** The target's URL, as stored. */
  url: string;
  /** `webhook-id`: the event's id (the same on every retry, so the merchant can drop a repeat). */
  webhookId: string;
  /** The JSON body, serialised once so that every POST sends the same bytes. */
  body: string;
  /**
   * The target's signing secrets in use now (current first; the previous one too during a
   * rotation's grace period): each adds a `webhook-signature`. None: the callback goes unsigned.
   */
  signingSecrets?: readonly string[];
  /** Headers of this kind of callback only (e.g. the test callback's marker), lower-case names. */
  extraHeaders?: Record<string, string>;
}

/** What sending needs: the target's auth, the sender, and the secrets its answer must not keep. */
export interface CallbackChannel {
  /** Built for this callback alone: `invalidate()` after a 401 forgets the token it handed out. */
  auth: CallbackAuthStrategy;
  send: SendCallback;
  /** The target's own secrets (its password), masked in the answer should the merchant echo them. */
  knownSecrets: readonly string[];
  /** Told the URL each POST goes to, once it goes out (the attempt log keeps it). */
  onPost?: (url: string) => void;
}

/**
 * The headers of every callback POST, built in this one place for queued and test callbacks alike.
 * The timestamp is that of the POST itself, so a receiver can check it for freshness.
 */
function callbackHeaders(message: CallbackMessage, authHeaders: Record<string, string>): Record<string, string> {
  const webhook = { id: message.webhookId, timestamp: Math.floor(Date.now() / 1000), body: message.body };
  const secrets = message.signingSecrets ?? [];
  return {
    // First, so that they can add to the callback's headers but never replace one.
    ...message.extraHeaders,
    'content-type': 'application/json',
    // Standard Webhooks headers: the id is the same on every retry, so the merchant can drop a
    // callback it has already processed; the signature (built from the very values sent) proves
    // the body came from Herald.
    ...(secrets.length > 0 ? standardWebhookHeaders(webhook, secrets) : { 'webhook-id': webhook.id, 'webhook-timestamp': String(webhook.timestamp) }),
    ...authHeaders,
  };
}

/**
 * Sends one callback and says how it ended; never throws. An OAuth target that answers 401 gets
 * one more POST with a fresh token (the token may have been revoked before it expired); a second
 * 401 is the merchant's answer. The answer's body is redacted before it is returned.
 */
export async function sendCallback(message: CallbackMessage, channel: CallbackChannel): Promise<CallbackResult> {
  const { auth, send } = channel;
  // Credentials this callback's auth headers carried, also masked in the answer.
  const sentCredentials: string[] = [];
  const post = async (): Promise<CallbackResponse> => {
    const authHeaders = await auth.headers();
    sentCredentials.push(...credentialsIn(authHeaders));
    channel.onPost?.(message.url);
    return send({ url: message.url, body: message.body, headers: callbackHeaders(message, authHeaders) });
  };
  try {
    let response = await post();
    if (response.status === 401 && auth.mode === 'oauth') {
      await auth.invalidate();
      response = await post();
    }
    return callbackResult({ ...response, body: redactForeignText(response.body, [...channel.knownSecrets, ...sentCredentials]) });
  } catch (error) {
    return callbackFailure(error);
  }
}

/** Each auth header's value, and its credentials without the scheme (`Basic …`, `Bearer …`). */
function credentialsIn(headers: Record<string, string>): string[] {
  return Object.values(headers).flatMap((value) => [value, ...(/^\S+\s+(\S.*)$/.exec(value)?.slice(1) ?? [])]);
}
