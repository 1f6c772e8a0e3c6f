import { createHash } from 'node:crypto';
import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  sql as fragment,
  type Compilable,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type Expression,
  type RawBuilder,
  type ExpressionBuilder,
  type SqlBool,
} from 'kysely';
import type pg from 'pg';
import type { DB } from './generated/kysely/schema';

/**
 * The data layer's one way to reach PostgreSQL. Every statement is built with `db`, a Kysely query
 * builder typed by the tables that prisma-kysely generates from prisma/schema.prisma (so a column
 * the schema lacks, or a row type that disagrees with it, fails the typecheck), and run with `run`
 * on a node-postgres pool (pool.ts: `createDatabasePool`), or on a transaction's connection
 * (`inTransaction`). Prisma is never involved: no service loads its client (about 17 MB at start),
 * its query compiler (about 75 MB at the first model query), or its query pipeline (about as much
 * CPU as PostgreSQL's work on the small hot-path statements).
 */

/** Something that runs one SQL statement: the pool, or a client inside a transaction. */
export type Sql = Pick<pg.Pool, 'query'>;

/** A driver that refuses to run anything: `db` only builds statements, `run` sends them. */
class BuildOnlyDriver implements Driver {
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    throw new Error('db builds statements only: send them with run(sql, query)');
  }
  async beginTransaction(): Promise<void> {}
  async commitTransaction(): Promise<void> {}
  async rollbackTransaction(): Promise<void> {}
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

/** The typed query builder of Herald's tables (snake_case, as the migrations name them). */
export const db = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new BuildOnlyDriver(),
    createIntrospector: (kysely) => new PostgresIntrospector(kysely),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** Kysely's `sql` tag, for the few expressions its builder has no method for (unnest, casts, intervals). */
export { fragment as sql };

/**
 * A statement written as SQL text (Kysely's `sql` tag, values as parameters), for the few that its
 * builder cannot say: a data-modifying WITH over unnest whose result is an aggregate.
 */
export function rawStatement<O>(statement: RawBuilder<O>): Compilable<O> {
  return { compile: () => statement.compile(db) };
}

/** The rows a built statement returns, as Kysely infers them from the schema. */
export type RowOf<Q> = Q extends Compilable<infer O> ? O : never;

export interface RunOptions {
  /**
   * Runs the statement as a named prepared statement: each pooled connection parses and plans it
   * once, then only binds it (measured on GET /events: a third less PostgreSQL CPU per request).
   * The value prefixes the statement's name; a hash of the text completes it, so one name never
   * stands for two texts. For hot paths with a bounded number of statement shapes only.
   */
  prepared?: string;
}

/** Runs one built statement and returns its rows (typed from the schema) and how many rows it touched. */
export async function run<Q extends Compilable<unknown>>(sql: Sql, query: Q, options: RunOptions = {}): Promise<{ rows: Array<RowOf<Q>>; rowCount: number }> {
  const compiled = query.compile();
  const text = compiled.sql;
  const values = compiled.parameters as unknown[];
  const result = await sql.query(options.prepared ? { name: statementName(options.prepared, text), text, values } : { text, values });
  return { rows: result.rows as Array<RowOf<Q>>, rowCount: result.rowCount ?? 0 };
}

// By prefix, then by text: a hot statement's text is the same string every time (byShape), whose
// hash V8 keeps, where a key joining prefix and text would be a new string to hash at every call.
const statementNames = new Map<string, Map<string, string>>();
function statementName(prefix: string, text: string): string {
  let names = statementNames.get(prefix);
  if (!names) {
    names = new Map<string, string>();
    statementNames.set(prefix, names);
  }
  let name = names.get(text);
  if (!name) {
    name = `${prefix}-${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    names.set(text, name);
  }
  return name;
}

/** A parameter's stand-in while `byShape` builds a statement's text. */
class Slot {
  constructor(readonly name: string) {}
}

/**
 * A statement built and compiled once per shape, for hot paths: Kysely's building and compiling
 * cost about 0.1 ms per statement of the size of GET /events' page, as much as a third of the
 * request's own work. `build` decides the text from `shape` alone (serialised as the cache key)
 * and must use each field of `values` as it is, only as a parameter: it is called once per shape
 * with stand-ins for the values, whose positions in the compiled parameters are kept; each call
 * then only fills those positions with its own values.
 */
export function byShape<S, V extends object, O>(build: (shape: S, values: V) => Compilable<O>): (shape: S, values: V) => Compilable<O> {
  const templates = new Map<string, { compiled: CompiledQuery<O>; slots: Array<keyof V> }>();
  const standIns = new Proxy({} as V, { get: (_target, name) => new Slot(String(name)) });
  return (shape, values) => {
    const key = JSON.stringify(shape);
    let template = templates.get(key);
    if (!template) {
      const compiled = build(shape, standIns).compile();
      const slots = compiled.parameters.map((parameter) => {
        if (!(parameter instanceof Slot)) throw new Error(`byShape: a parameter of the statement is not one of its values (${String(parameter)})`);
        return parameter.name as keyof V;
      });
      template = { compiled, slots };
      templates.set(key, template);
    }
    const { compiled, slots } = template;
    return { compile: () => ({ ...compiled, parameters: slots.map((slot) => values[slot]) }) };
  };
}

/**
 * Runs queries in order on one connection and returns their results. On a connection that
 * pipelines (DatabasePoolOptions.pipeline) all are sent at once, one round trip in all, and
 * PostgreSQL still runs each only after the one before; otherwise each is sent once the one
 * before has answered (node-postgres deprecates queueing on a connection that does not pipeline).
 * Rejects with the first failure, once every query sent has answered.
 */
export async function inOrder<T extends readonly unknown[]>(sql: Sql, queries: { [K in keyof T]: () => Promise<T[K]> }): Promise<T> {
  if (!(sql as Partial<pg.Client>).pipeline) {
    const results: unknown[] = [];
    for (const query of queries) results.push(await query());
    return results as unknown as T;
  }
  const settled = await Promise.allSettled(queries.map((query) => query()));
  const failed = settled.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

export interface TransactionOptions {
  /**
   * Ends the transaction (PostgreSQL closes the connection, the work fails) when it sits idle
   * this long, e.g. waiting on Redis while it holds row locks.
   */
  idleTimeoutMs?: number;
  /**
   * Statements to run last, once `work` has resolved: they are sent back to back with the COMMIT,
   * so that on a pool that pipelines (DatabasePoolOptions.pipeline) the row locks they take are
   * held only while PostgreSQL runs them and flushes the commit, never across a round trip to this
   * process (a busy event loop, a GC pause, a descheduled process). For updates of rows that every
   * concurrent transaction shares, such as counters.
   */
  last?: () => ReadonlyArray<Compilable<unknown>>;
}

/**
 * Runs `work` in one transaction on a connection of the pool: committed when it resolves, rolled
 * back when it throws. A connection whose rollback fails is discarded rather than returned.
 */
export async function inTransaction<T>(pool: pg.Pool, work: (sql: Sql) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    if (options.idleTimeoutMs !== undefined) {
      // SET takes no parameters; the value is an integer we format ourselves.
      await client.query(`SET LOCAL idle_in_transaction_session_timeout = ${Math.max(1, Math.round(options.idleTimeoutMs))}`);
    }
    const result = await work(client);
    const last = (options.last?.() ?? []).map((statement) => () => run(client, statement));
    const ended = await inOrder(client, [...last, () => client.query('COMMIT')]);
    // Pipelined, a COMMIT behind a failed statement still runs and rolls back: never take that for committed.
    const { command } = ended.at(-1) as pg.QueryResult;
    if (command !== 'COMMIT') throw new Error(`the transaction ended with ${command}, not COMMIT`);
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * The one filter builder: the conditions that are set (a filter field left undefined gives
 * `undefined` or `false` here), joined with AND; TRUE when none is set.
 */
export function allOf<D, TB extends keyof D>(
  eb: ExpressionBuilder<D, TB>,
  conditions: ReadonlyArray<Expression<SqlBool> | undefined | false>,
): Expression<SqlBool> {
  const set = conditions.filter((c): c is Expression<SqlBool> => Boolean(c));
  return set.length === 0 ? fragment<SqlBool>`true` : eb.and(set);
}
