import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { HttpError } from '../http/http-error';

/**
 * Requires `Authorization: Bearer <token>` equal to `expected` (the admin or the ingest token).
 * Compared as SHA-256 digests in constant time, so neither the length nor the content leaks.
 */
export function requireBearerToken(expected: string, realm: string): RequestHandler {
  const expectedDigest = digest(expected);
  return (req, _res, next) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
    if (!match || !timingSafeEqual(digest(match[1]!), expectedDigest)) {
      next(
        new HttpError(401, 'unauthorized', 'Unauthorized', 'A valid Authorization: Bearer token is required.', { header: 'authorization' }, {
          'WWW-Authenticate': `Bearer realm="${realm}"`,
        }),
      );
      return;
    }
    next();
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
