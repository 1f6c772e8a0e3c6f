import winston from 'winston';

export type Logger = winston.Logger;

export interface LoggerOptions {
  /** Minimum level written. */
  level: string;
  /** Service name stamped on every line. */
  service: string;
  /** Where lines go; defaults to stdout. Tests pass a stream to capture output. */
  stream?: NodeJS.WritableStream;
}

const REDACTED = '[REDACTED]';

// Property names whose values are secrets wherever they appear in a log entry's metadata.
const SECRET_KEY = /pass(word)?|secret|token|authorization|api[-_]?key|cookie|credential/i;
// Secrets written inside free text: "Authorization: Basic …", "Bearer …", URL user info.
const SECRET_IN_TEXT: ReadonlyArray<[RegExp, string]> = [
  [/\b(Basic|Bearer)\s+[A-Za-z0-9._~+/=-]+/g, `$1 ${REDACTED}`],
  [/(\/\/[^/\s:@]+:)[^@\s/]+@/g, `$1${REDACTED}@`],
];

/** Replaces secret values by a marker, recursively, without touching the original object. */
export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (value instanceof Error) return { name: value.name, message: redactText(value.message) };
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] = SECRET_KEY.test(key) && item !== null && item !== undefined ? REDACTED : redact(item, depth + 1);
  }
  return out;
}

function redactText(text: string): string {
  return SECRET_IN_TEXT.reduce((acc, [pattern, replacement]) => acc.replace(pattern, replacement), text);
}

// A JSON member `"name": "value"`, matched in the text itself: a stored answer keeps its bytes, and
// a body cut off at the size limit is no longer JSON that could be parsed.
const JSON_STRING_MEMBER = /("((?:[^"\\]|\\.)*)"\s*:\s*)"(?:[^"\\]|\\.)*"/g;
const SCHEME_ONLY = /^"(Basic|Bearer) \[REDACTED\]"$/;
/**
 * The forms in which a merchant's software may echo a secret it was sent: as is; JSON-escaped, as
 * JavaScript writes it and as Go's encoding/json does (which also escapes <, > and &);
 * percent-encoded; HTML-escaped (named entities, and the numeric ones Go's html/template writes);
 * base64 (padded, unpadded, URL-safe); and hex, lower and upper case.
 */
function encodedForms(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  const bytes = Buffer.from(secret, 'utf8');
  const base64 = bytes.toString('base64');
  const html = (quote: string, apostrophe: string) =>
    secret.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': quote, "'": apostrophe })[c]!);
  return [
    secret,
    json,
    json.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    encodeURIComponent(secret),
    html('&quot;', '&#39;'),
    html('&#34;', '&#39;'),
    html('&quot;', '&#x27;'),
    base64,
    base64.replace(/=+$/, ''),
    bytes.toString('base64url'),
    bytes.toString('hex'),
    bytes.toString('hex').toUpperCase(),
  ];
}

// A known secret's tail this long at the very end of a cut-off text is masked too.
const MIN_SECRET_TAIL = 4;

/** How redactForeignText reads its text. */
export interface ForeignTextOptions {
  /**
   * Whether the text may end where a size limit cut it (a stored answer), so that a known secret's
   * beginning at its very end is masked too. Default true; false for a whole value (a parsed JSON
   * string), where `invalid_client` ending like a password that starts `client…` is no secret.
   */
  readonly mayBeCutOff?: boolean;
}

/**
 * Text written by someone else, e.g. a merchant's answer, as it may be stored: the log rules for
 * free text, the log rules for property names on every JSON string member in it, and every
 * occurrence of `knownSecrets` (in every form encodedForms lists, and a secret's beginning where
 * the text breaks off) replaced by the marker.
 */
export function redactForeignText(text: string, knownSecrets: readonly string[] = [], options: ForeignTextOptions = {}): string {
  const { mayBeCutOff = true } = options;
  // Most merchants answer 200 with an empty body: nothing to mask, and this runs on every callback.
  if (text === '') return text;
  // Known secrets first, while the text is as the merchant wrote it.
  let out = text;
  const forms = knownSecrets.filter((secret) => secret !== '').flatMap(encodedForms);
  // Longest first, so that a secret containing another is masked whole.
  for (const form of [...new Set(forms)].sort((a, b) => b.length - a.length)) {
    if (out.includes(form)) out = out.split(form).join(REDACTED);
    // A tail longer than the text cannot end it; a whole text has no broken-off secret at its end.
    for (let length = mayBeCutOff ? Math.min(form.length - 1, out.length) : 0; length >= MIN_SECRET_TAIL; length -= 1) {
      if (out.endsWith(form.slice(0, length))) {
        out = out.slice(0, out.length - length) + REDACTED;
        break;
      }
    }
  }
  return redactText(out).replace(JSON_STRING_MEMBER, (member: string, head: string, name: string) =>
    // "Basic [REDACTED]" as a rule left it still tells the reader which scheme was echoed.
    SECRET_KEY.test(name) && !SCHEME_ONLY.test(member.slice(head.length)) ? `${head}"${REDACTED}"` : member,
  );
}

// winston keeps level/message and the metadata on one info object; symbols carry its internals.
const redactFormat = winston.format((info) => {
  for (const key of Object.keys(info)) {
    info[key] = SECRET_KEY.test(key) ? REDACTED : redact(info[key]);
  }
  return info;
});

/** One JSON line per entry, secrets redacted. */
export function createLogger(options: LoggerOptions): Logger {
  const transport = options.stream ? new winston.transports.Stream({ stream: options.stream }) : new winston.transports.Console();
  // winston runs the formats before its transports drop entries below the level: an entry below
  // it is dropped first, so that a line per request or callback costs nothing when it is not written.
  const belowLevel = winston.format((info) => (logger.isLevelEnabled(info.level) ? info : false));
  const logger: Logger = winston.createLogger({
    level: options.level,
    defaultMeta: { service: options.service },
    format: winston.format.combine(belowLevel(), redactFormat(), winston.format.timestamp(), winston.format.json()),
    transports: [transport],
  });
  return logger;
}
