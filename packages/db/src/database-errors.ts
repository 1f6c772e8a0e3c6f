/**
 * The one place that classifies database errors, whichever layer raised them: Prisma (migrations,
 * the client's connection), its pg driver adapter, or node-postgres itself (every repository
 * statement goes through its pool).
 */

// Prisma's own codes: cannot reach, timed out, server closed the connection, pool exhausted.
const UNAVAILABLE_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
// What the pg driver adapter reports underneath.
const UNAVAILABLE_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections', 'TlsConnectionError']);
// Errors named so: Prisma could not connect; an ingest kept finding the month turned (the
// database's clock stepping back and forth across a month's start) or kept racing other ingests of
// its ids: nothing was stored, and a retry stores it (repositories/event-ingest.ts).
const UNAVAILABLE_ERROR_NAMES = new Set(['PrismaClientInitializationError', 'IngestMonthTurnedError', 'IngestRaceError']);
// PostgreSQL SQLSTATEs of a server going away or refusing work: admin/crash shutdown, cannot
// connect now, and out of a resource (insufficient resources, disk full, out of memory, which
// includes a full shared lock table, too many connections): the work is rolled back and may pass later.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53000', '53100', '53200', '53300', '08000', '08003', '08006']);

// What node-postgres raises itself (every repository statement goes through its pool): the
// socket errors of a server that is down or unreachable, and the pool's and the client's own messages.
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN']);
const UNAVAILABLE_PG_MESSAGES = /^(timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|Client was closed)/;

/**
 * Tells "PostgreSQL is down or overloaded" (retry later: HTTP 503) from every other database error
 * (a bug or bad data: HTTP 500).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  if (isNodePostgresUnavailable(error)) return true;
  const { code, meta, name } = error as { code?: unknown; meta?: { driverAdapterError?: { cause?: { kind?: string; originalCode?: string } } }; name?: string };
  if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
  if (name !== undefined && UNAVAILABLE_ERROR_NAMES.has(name)) return true;
  const cause = meta?.driverAdapterError?.cause;
  if (cause?.kind && UNAVAILABLE_KINDS.has(cause.kind)) return true;
  if (cause?.originalCode && UNAVAILABLE_SQLSTATES.has(cause.originalCode)) return true;
  return typeof code === 'string' && UNAVAILABLE_SQLSTATES.has(code);
}

function isNodePostgresUnavailable(error: object): boolean {
  const { code, message, errors } = error as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === 'string' && UNAVAILABLE_SOCKET_CODES.has(code)) return true;
  if (typeof message === 'string' && UNAVAILABLE_PG_MESSAGES.test(message)) return true;
  // A connect to a name with several addresses fails with an AggregateError of each attempt.
  return Array.isArray(errors) && errors.length > 0 && errors.every((e) => e !== null && typeof e === 'object' && isNodePostgresUnavailable(e));
}

/** A unique constraint refused the row (SQLSTATE 23505, Prisma's P2002). */
export function isUniqueViolation(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const { code, meta } = error as { code?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: string } } } };
  return code === '23505' || code === 'P2002' || meta?.driverAdapterError?.cause?.originalCode === '23505';
}

/**
 * PostgreSQL cancelled the statement (SQLSTATE 57014): it ran past its statement_timeout, or an
 * operator cancelled it. Not "unavailable": the database is up, this one query was too long.
 */
export function isStatementCancelled(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const { code, meta } = error as { code?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: string } } } };
  return code === '57014' || meta?.driverAdapterError?.cause?.originalCode === '57014';
}
