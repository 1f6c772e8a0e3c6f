import type { IncomingMessage } from 'node:http';
import { errorCode } from './outbound-failure';

/** What was read of a body, and why reading stopped. */
export interface BodyRead {
  body: string;
  end: 'complete' | 'too_large' | 'timeout' | 'broken';
  /** The system error that broke the body off. */
  causeCode?: string;
}

/** Reads at most `maxBytes` of the body, then drops the stream (and its connection) rather than reading on. */
export async function readBounded(stream: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<BodyRead> {
  const chunks: Buffer[] = [];
  let kept = 0;
  let end: BodyRead['end'] = 'complete';
  let causeCode: string | undefined;
  const onAbort = (): void => {
    stream.destroy();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const room = maxBytes - kept;
      if (chunk.length > room) {
        if (room > 0) chunks.push(chunk.subarray(0, room));
        kept = maxBytes;
        end = 'too_large';
        // Leaving the loop destroys the stream: the rest of a large answer is never read.
        break;
      }
      chunks.push(chunk);
      kept += chunk.length;
    }
  } catch (error) {
    end = signal.aborted ? 'timeout' : 'broken';
    causeCode = errorCode(error);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  // A stream destroyed by the abort may end its iteration without an error.
  if (end === 'complete' && !stream.complete) end = signal.aborted ? 'timeout' : 'broken';
  const body = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
  return { body, end, ...(causeCode === undefined ? {} : { causeCode }) };
}
