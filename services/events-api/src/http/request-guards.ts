import { MAX_JSON_DEPTH, pointerTo, ValidationError } from '@herald/domain';
import iconv from 'iconv-lite';
import { HttpError } from './http-error';
import type { RequestHandler } from 'express';

// The request's raw form, checked before any route, authentication or parser runs: a path that
// decodes cleanly, and (on the ingest) a body whose nesting stays within bounds.

/**
 * Refuses, before any route or authentication runs, a path with a segment that is not
 * percent-encoded UTF-8 or that decodes to NUL: a 400 problem+json naming the segment as sent.
 * Express decodes path parameters only when a route matches and then throws an unexposed
 * URIError; NUL decodes fine but PostgreSQL stores no U+0000 in text. One check here covers every
 * route, present and future, the dashboard's included.
 */
export const pathGuard: RequestHandler = (req, _res, next) => {
  // A path with no percent sign has nothing to decode (most requests, every GET /events).
  if (!req.path.includes('%')) {
    next();
    return;
  }
  const errors = req.path
    .split('/')
    .map((segment) => ({ segment, message: problemOf(segment) }))
    .filter((e): e is { segment: string; message: string } => e.message !== undefined);
  if (errors.length === 0) {
    next();
    return;
  }
  next(
    new HttpError(400, 'malformed_path', 'Malformed path', `Malformed path segment: ${errors.map((e) => JSON.stringify(e.segment)).join(', ')}.`, { errors }),
  );
};

function problemOf(segment: string): string | undefined {
  if (!segment.includes('%')) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    return 'is not valid percent-encoded UTF-8';
  }
  return decoded.includes('\u0000') ? 'must not contain NUL (%00)' : undefined;
}

/** Deepest an ingest body may nest: an event of MAX_JSON_DEPTH inside a batch (`{"events": [...]}`). */
export const MAX_BODY_DEPTH = MAX_JSON_DEPTH + 2;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/** Where the scan stands in one open array or object. */
interface Frame {
  array: boolean;
  /** Arrays: the index of the current item. */
  index: number;
  /** Objects: where the current member's name starts and ends in the text (its quotes included); -1 before the first. */
  nameStart: number;
  nameEnd: number;
  /** Objects: the next string is a member name. */
  expectName: boolean;
}

/**
 * Finds the first array or object of a JSON text nested deeper than `maxDepth` (the outermost
 * counting 1) without parsing it: one pass over the bytes that counts brackets outside strings.
 * Parsing first would cost seconds and a gigabyte on a hostile body (millions of nested arrays)
 * before any check could run; this pass costs milliseconds and allocates nothing but the frames
 * up to `maxDepth`. Returns the JSON Pointer of that array or object, or undefined when the text is
 * not too deep. Malformed JSON is left to the parser (it may be refused here first when too deep).
 *
 * Works on UTF-8 bytes: quotes, backslashes and brackets are ASCII, which never occur inside a
 * multi-byte sequence.
 */
export function tooDeepAt(text: Uint8Array, maxDepth: number): string | undefined {
  const frames: Frame[] = [];
  let inString = false;
  // The object whose member name is the string being read, if it is one.
  let namedIn: Frame | undefined;
  for (let i = 0; i < text.length; i++) {
    const byte = text[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) {
        inString = false;
        if (namedIn) namedIn.nameEnd = i + 1;
        namedIn = undefined;
      }
      continue;
    }
    const top = frames.at(-1);
    switch (byte) {
      case QUOTE:
        inString = true;
        if (top && !top.array && top.expectName) {
          top.expectName = false;
          top.nameStart = i;
          namedIn = top;
        }
        break;
      case OPEN_ARRAY:
      case OPEN_OBJECT:
        if (frames.length >= maxDepth) return pointerOf(text, frames);
        frames.push({ array: byte === OPEN_ARRAY, index: 0, nameStart: -1, nameEnd: -1, expectName: byte === OPEN_OBJECT });
        break;
      case CLOSE_ARRAY:
      case CLOSE_OBJECT:
        frames.pop();
        break;
      case COMMA:
        if (top?.array) top.index++;
        else if (top) top.expectName = true;
        break;
      default:
    }
  }
  return undefined;
}

/**
 * For express.json's `verify` option, which sees the raw body before it is parsed: refuses a body
 * nested deeper than `maxDepth` with a ValidationError (400 naming where) so it is never parsed.
 * A body in UTF-16 is decoded first, as the body parser decodes it; other charsets are refused (415).
 */
export function refuseDeepJson(maxDepth: number): (req: unknown, res: unknown, body: Buffer, encoding: string) => void {
  return (_req, _res, body, encoding) => {
    const pointer = tooDeepAt(utf8(body, encoding), maxDepth);
    if (pointer !== undefined) {
      throw new ValidationError([{ pointer, keyword: 'maxDepth', message: `is nested too deeply (an event holds at most ${MAX_JSON_DEPTH} levels)` }]);
    }
  };
}

// The charsets a body may come in besides UTF-8 (RFC 8259 asks for UTF-8; UTF-16 is kept for
// producers that send it). Anything else is a 415.
const UTF_16 = /^utf-?16(le|be)?$/i;

function utf8(body: Buffer, encoding: string): Uint8Array {
  if (/^utf-?8$/i.test(encoding)) return body;
  // Decoded as the body parser will decode it (body-parser uses iconv-lite), so that the check
  // sees the text the parser will parse: a UTF-16 body without a byte order mark is read in the
  // byte order iconv-lite finds in it, which another decoder could guess otherwise.
  if (!UTF_16.test(encoding)) {
    throw new HttpError(415, 'unsupported_charset', 'Unsupported Media Type', `The charset ${encoding} is not supported; send JSON in UTF-8.`, {
      header: 'content-type',
    });
  }
  return Buffer.from(iconv.decode(body, encoding), 'utf8');
}

/** The JSON Pointer of the value the frames stand at. */
function pointerOf(text: Uint8Array, frames: readonly Frame[]): string {
  return pointerTo(frames.map((frame) => (frame.array ? String(frame.index) : memberName(text, frame))));
}

function memberName(text: Uint8Array, frame: Frame): string {
  if (frame.nameStart < 0) return '';
  try {
    return JSON.parse(Buffer.from(text.subarray(frame.nameStart, frame.nameEnd)).toString('utf8')) as string;
  } catch {
    return '';
  }
}
