import { createHash, randomBytes } from 'node:crypto';
import type { DatabasePool } from '../pool';
import { db, inTransaction, run, sql } from '../sql';

/** Whose merchant portal a link or a session opens: a merchant's, or a program's own. */
export type PortalScope = { kind: 'merchant'; programId: string; merchantId: string } | { kind: 'program'; programId: string };

/** A portal session as the portal uses it: whose it is, its CSRF token, and when it ends. */
export interface PortalSession {
  scope: PortalScope;
  /** The session's synchronizer token, which every form of the portal carries back. */
  csrfToken: string;
  expiresAt: Date;
}

// Link and session tokens are 256 random bits, as API keys are: SHA-256 is enough to store them,
// and a stolen table opens no portal.
const TOKEN_BYTES = 32;

function newToken(): string {
  return randomBytes(TOKEN_BYTES).toString('base64url');
}

function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

const OWNER_COLUMNS = ['program_id as programId', 'merchant_id as merchantId'] as const;

/** Every statement of the repository, built from its parameters (the SQL snapshot compiles each). */
export const portalSessionQueries = {
  createLink: (row: { tokenHash: string; programId: string; merchantId: string | null; expiresAt: Date }) =>
    db
      .insertInto('portal_links')
      .values({ token_hash: row.tokenHash, program_id: row.programId, merchant_id: row.merchantId, expires_at: row.expiresAt })
      .returning('expires_at as expiresAt'),
  // One statement marks the link used and answers whose it was: of two requests racing with the
  // same link, PostgreSQL's row lock lets exactly one through.
  useLink: (tokenHash: string) =>
    db
      .updateTable('portal_links')
      .set({ used_at: sql<Date>`now()` })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', sql<Date>`now()`)
      .returning(OWNER_COLUMNS),
  createSession: (row: { tokenHash: string; csrfToken: string; programId: string; merchantId: string | null; expiresAt: Date }) =>
    db.insertInto('portal_sessions').values({
      token_hash: row.tokenHash,
      csrf_token: row.csrfToken,
      program_id: row.programId,
      merchant_id: row.merchantId,
      expires_at: row.expiresAt,
    }),
  findSession: (tokenHash: string) =>
    db
      .selectFrom('portal_sessions')
      .select([...OWNER_COLUMNS, 'csrf_token as csrfToken', 'expires_at as expiresAt'])
      .where('token_hash', '=', tokenHash)
      .where('expires_at', '>', sql<Date>`now()`),
  endSession: (tokenHash: string) => db.deleteFrom('portal_sessions').where('token_hash', '=', tokenHash),
  // Expired links and sessions are worthless: they go whenever a new link is made, so the tables
  // hold at most what is alive plus what expired since the last link.
  removeExpiredLinks: () => db.deleteFrom('portal_links').where('expires_at', '<=', sql<Date>`now()`),
  removeExpiredSessions: () => db.deleteFrom('portal_sessions').where('expires_at', '<=', sql<Date>`now()`),
};

function scopeOf(row: { programId: string; merchantId: string | null }): PortalScope {
  return row.merchantId === null ? { kind: 'program', programId: row.programId } : { kind: 'merchant', programId: row.programId, merchantId: row.merchantId };
}

/**
 * The merchant portal's links and sessions, in PostgreSQL (never Redis: a session is a credential,
 * kept with the tenants it opens). Stores and loads only; the lifetimes are the caller's.
 */
export function portalSessionRepository(pool: DatabasePool) {
  return {
    /** Makes a single-use link token for `scope`, valid until `expiresAt`; only its hash is stored. */
    async createLink(scope: PortalScope, expiresAt: Date): Promise<{ token: string; expiresAt: Date }> {
      const token = newToken();
      await run(pool, portalSessionQueries.removeExpiredLinks());
      await run(pool, portalSessionQueries.removeExpiredSessions());
      const { rows } = await run(
        pool,
        portalSessionQueries.createLink({
          tokenHash: hashToken(token),
          programId: scope.programId,
          merchantId: scope.kind === 'merchant' ? scope.merchantId : null,
          expiresAt,
        }),
      );
      return { token, expiresAt: rows[0]!.expiresAt };
    },

    /**
     * Exchanges a link token, once, for a new session ending at `expiresAt`: the session's cookie
     * token (in clear this once) and the session. Null when the link is unknown, used or expired.
     */
    async exchangeLink(linkToken: string, expiresAt: Date): Promise<{ token: string; session: PortalSession } | null> {
      return inTransaction(pool, async (tx) => {
        const { rows } = await run(tx, portalSessionQueries.useLink(hashToken(linkToken)));
        const owner = rows[0];
        if (!owner) return null;
        const token = newToken();
        const csrfToken = newToken();
        await run(tx, portalSessionQueries.createSession({ tokenHash: hashToken(token), csrfToken, ...owner, expiresAt }));
        return { token, session: { scope: scopeOf(owner), csrfToken, expiresAt } };
      });
    },

    /** The live session of a cookie token, or null (unknown, ended or expired). */
    async findSession(token: string): Promise<PortalSession | null> {
      const { rows } = await run(pool, portalSessionQueries.findSession(hashToken(token)));
      const row = rows[0];
      return row ? { scope: scopeOf(row), csrfToken: row.csrfToken, expiresAt: row.expiresAt } : null;
    },

    /** Ends a session at once (logging out); ending an unknown one does nothing. */
    async endSession(token: string): Promise<void> {
      await run(pool, portalSessionQueries.endSession(hashToken(token)));
    },
  };
}

export type PortalSessionRepository = ReturnType<typeof portalSessionRepository>;
