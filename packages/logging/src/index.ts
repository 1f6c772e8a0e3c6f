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

// winston keeps level/message and the metadata on one info object; symbols carry its internals.
const redactFormat = winston.format((info) => {
  for (const key of Object.keys(info)) {
    info[key] = SECRET_KEY.test(key) ? REDACTED : redact(info[key]);
  }
  return info;
});

/** One JSON line per entry, secrets redacted. */
export function createLogger(options: LoggerOptions): Logger {
  const transport = options.stream
    ? new winston.transports.Stream({ stream: options.stream })
    : new winston.transports.Console();
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
