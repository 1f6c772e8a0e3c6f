import { isUtf8 } from 'node:buffer';
import { MAX_JSON_DEPTH, pointerTo, ValidationError, type Violation } from '@herald/domain';
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

/** Where a scan of a JSON text stopped, and the open arrays and objects there. */
interface Scan {
  /** `depth`: an array or object would open past maxDepth; `offset`: the offset asked for was reached; `end`: neither. */
  stoppedBy: 'depth' | 'offset' | 'end';
  frames: Frame[];
  /** Stopped inside a member name (of the innermost object). */
  inName: boolean;
}

/**
 * One pass over the bytes of a JSON text that counts brackets outside strings, without parsing
 * it, until an array or object opens deeper than `maxDepth` (the outermost counting 1) or byte
 * `until` is reached. Parsing first would cost seconds and a gigabyte on a hostile body (millions
 * of nested arrays) before any check could run; this pass costs milliseconds and allocates
 * nothing but the frames up to `maxDepth`. Malformed JSON is left to the parser.
 *
 * Works on UTF-8 bytes: quotes, backslashes and brackets are ASCII, which never occur inside a
 * multi-byte sequence.
 */
function scanJson(text: Uint8Array, maxDepth: number, until = text.length): Scan {
  const frames: Frame[] = [];
  let inString = false;
  // The object whose member name is the string being read, if it is one.
  let namedIn: Frame | undefined;
  for (let i = 0; i < text.length; i++) {
    if (i >= until) return { stoppedBy: 'offset', frames, inName: namedIn !== undefined };
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
        if (frames.length >= maxDepth) return { stoppedBy: 'depth', frames, inName: false };
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
  return { stoppedBy: 'end', frames, inName: false };
}

/**
 * The JSON Pointer of the first array or object of a JSON text nested deeper than `maxDepth` (the
 * outermost counting 1), or undefined when the text is not too deep (see scanJson).
 */
export function tooDeepAt(text: Uint8Array, maxDepth: number): string | undefined {
  const scan = scanJson(text, maxDepth);
  return scan.stoppedBy === 'depth' ? pointerOf(text, scan.frames) : undefined;
}

/**
 * The first malformed UTF-8 sequence of a JSON text, named by the JSON Pointer of the value it is
 * in (or of the object whose member name it is in); undefined when the text is valid UTF-8.
 * Decoded, each such sequence would silently become U+FFFD.
 */
function malformedUtf8At(text: Uint8Array): Violation | undefined {
  if (isUtf8(text)) return undefined;
  const offset = firstMalformedByte(text);
  const { frames, inName } = scanJson(text, Number.POSITIVE_INFINITY, offset);
  const byte = `0x${text[offset]!.toString(16).toUpperCase().padStart(2, '0')}`;
  const fix = 'send the body in UTF-8 (a string that is not text belongs in base64)';
  if (inName) {
    return {
      pointer: pointerOf(text, frames.slice(0, -1)),
      keyword: 'utf8',
      message: `has a member name that is not valid UTF-8 (byte ${byte} at offset ${offset}): ${fix}`,
    };
  }
  return { pointer: pointerOf(text, frames), keyword: 'utf8', message: `is not valid UTF-8 (byte ${byte} at offset ${offset}): ${fix}` };
}

/** The offset of the first byte that starts no well-formed UTF-8 sequence (RFC 3629: no overlong form, no surrogate, nothing past U+10FFFF). */
function firstMalformedByte(text: Uint8Array): number {
  let i = 0;
  while (i < text.length) {
    const lead = text[i]!;
    // The length of the sequence `lead` starts, and the range its second byte must fall in.
    const [length, low, high] =
      lead < 0x80
        ? [1, 0, 0]
        : lead >= 0xc2 && lead <= 0xdf
          ? [2, 0x80, 0xbf]
          : lead === 0xe0
            ? [3, 0xa0, 0xbf]
            : lead === 0xed
              ? [3, 0x80, 0x9f]
              : lead >= 0xe1 && lead <= 0xef
                ? [3, 0x80, 0xbf]
                : lead === 0xf0
                  ? [4, 0x90, 0xbf]
                  : lead >= 0xf1 && lead <= 0xf3
                    ? [4, 0x80, 0xbf]
                    : lead === 0xf4
                      ? [4, 0x80, 0x8f]
                      : [0, 0, 0];
    if (length === 0) return i;
    for (let k = 1; k < length; k++) {
      const next = text[i + k];
      const [min, max] = k === 1 ? [low, high] : [0x80, 0xbf];
      if (next === undefined || next < min || next > max) return i;
    }
    i += length;
  }
  return text.length;
}

/**
 * For express.json's `verify` option, which sees the raw body before it is parsed: refuses a body
 * nested deeper than `maxDepth`, or one that is not valid UTF-8, with a ValidationError (400
 * naming where) so it is never parsed. A body in UTF-16 is decoded first, as the body parser
 * decodes it; other charsets are refused (415).
 */
export function refuseMalformedJson(maxDepth: number): (req: unknown, res: unknown, body: Buffer, encoding: string) => void {
  return (_req, _res, body, encoding) => {
    const text = utf8(body, encoding);
    const pointer = tooDeepAt(text, maxDepth);
    if (pointer !== undefined) {
      throw new ValidationError([{ pointer, keyword: 'maxDepth', message: `is nested too deeply (an event holds at most ${MAX_JSON_DEPTH} levels)` }]);
    }
    // A UTF-16 body was decoded to valid UTF-8 already (what could not be decoded is U+FFFD there).
    const malformed = text === body ? malformedUtf8At(text) : undefined;
    if (malformed) throw new ValidationError([malformed]);
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
