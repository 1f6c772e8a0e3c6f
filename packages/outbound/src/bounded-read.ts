import type { IncomingMessage } from 'node:http';
import type { Deadline } from './deadline';
import { errorCode } from './outbound-failure';

/** What was read of a body, and why reading stopped. */
export interface BodyRead {
  body: string;
  end: 'complete' | 'too_large' | 'timeout' | 'broken';
  /** The system error that broke the body off. */
  causeCode?: string;
}

/**
 * Reads at most `maxBytes` of the body, then drops the stream (and its connection) rather than
 * reading on. Over the stream's own events: a callback's answer is one small chunk, and an async
 * iterator over it (its promises, its extra listeners) cost more CPU than the rest of the read.
 */
export function readBounded(stream: IncomingMessage, maxBytes: number, deadline: Deadline): Promise<BodyRead> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    let end: BodyRead['end'] = 'complete';
    let causeCode: string | undefined;
    let done = false;
    let stopWaiting = (): void => undefined;

    const finish = (): void => {
      if (done) return;
      done = true;
      // The error listener stays: an error the stream emits later must not go unhandled.
      stream.off('data', onData);
      stream.off('end', finish);
      stream.off('close', finish);
      stopWaiting();
      // A stream destroyed (past the time limit, by a reset) may close without an error and without its end.
      if (end === 'complete' && !stream.complete) end = deadline.expired ? 'timeout' : 'broken';
      const body = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      resolve({ body, end, ...(causeCode === undefined ? {} : { causeCode }) });
    };
    const onData = (chunk: Buffer): void => {
      const room = maxBytes - kept;
      if (chunk.length > room) {
        if (room > 0) chunks.push(chunk.subarray(0, room));
        kept = maxBytes;
        end = 'too_large';
        // The rest of a large answer is never read.
        stream.destroy();
        finish();
        return;
      }
      chunks.push(chunk);
      kept += chunk.length;
    };
    const onError = (error: unknown): void => {
      if (done) return;
      end = deadline.expired ? 'timeout' : 'broken';
      causeCode = errorCode(error);
      finish();
    };
    if (deadline.expired) {
      stream.destroy();
      end = 'timeout';
      finish();
      return;
    }
    stopWaiting = deadline.onExpiry(() => stream.destroy());
    stream.on('data', onData);
    stream.once('end', finish);
    stream.on('error', onError);
    stream.once('close', finish);
  });
}
