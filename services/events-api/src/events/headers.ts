import type { Request } from 'express';
import { HttpError } from '../http/http-error';

/** A header GET /events requires, and the rule its value must meet (the spec's header table). */
interface HeaderRule {
  name: string;
  accepts: (value: string) => boolean;
  expected: string;
}

// "scheme://host[:port]" as browsers serialise an origin, or "null" for an opaque one.
const SERIALIZED_ORIGIN = /^(null|[a-z][a-z0-9+.-]*:\/\/[^\s/?#]+)$/i;

export const REQUIRED_HEADERS: readonly HeaderRule[] = [
  { name: 'Content-Type', accepts: (v) => /^application\/json\s*(;.*)?$/i.test(v), expected: 'application/json' },
  // Language tags compare case-insensitively (RFC 5646), so en-us is en-US.
  { name: 'Accept-Language', accepts: (v) => v.trim().toLowerCase() === 'en-us', expected: 'en-US' },
  { name: 'Origin', accepts: (v) => SERIALIZED_ORIGIN.test(v.trim()), expected: 'the origin of the request, e.g. https://shop.example' },
  { name: 'User-Agent', accepts: (v) => v.trim().length > 0, expected: 'the client making the request' },
];

/** Checks every required header; the 400 names each missing or wrong one. */
export function checkRequiredHeaders(req: Request): void {
  const errors = REQUIRED_HEADERS.flatMap(({ name, accepts, expected }) => {
    const value = req.get(name);
    if (value === undefined || value === '') return [{ header: name, message: `is required (${expected})` }];
    return accepts(value) ? [] : [{ header: name, message: `must be ${expected}` }];
  });
  if (errors.length > 0) {
    throw new HttpError(400, 'invalid_header', 'Invalid request header', `Missing or invalid header: ${errors.map((e) => e.header).join(', ')}.`, {
      errors,
    });
  }
}
