/**
 * The PostgreSQL migration SQL Prisma would write, computed by Prisma's own schema engine in its
 * official WebAssembly build (@prisma/schema-engine-wasm), because the native engine that
 * `prisma migrate` needs cannot be downloaded on our machines.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import type { DiffTarget, SchemaEngine } from '@prisma/schema-engine-wasm';
import { Pool, type QueryConfig, type QueryResult } from 'pg';

// Node 20 has WebAssembly, but neither lib ES2022 nor @types/node 20 declares it.
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, object>) => { exports: Record<string, unknown> };
};

type Connection = Awaited<ReturnType<PrismaPg['connect']>>;
type SqlQuery = Parameters<Connection['queryRaw']>[0];
type SqlResultSet = Awaited<ReturnType<Connection['queryRaw']>>;

/**
 * The SQL that takes a database described by the schema.prisma text `from` (null: an empty
 * database) to one described by `to`, or '' when they describe the same database. Needs no database.
 */
export async function schemaDiffSql(from: string | null, to: string): Promise<string> {
  const start: DiffTarget = from === null ? { tag: 'empty' } : { tag: 'schemaDatamodel', ...schemaFiles(from) };
  return diff(engineAdapter(answerVersionProbe), start, to);
}

/**
 * The SQL that takes the live database at `databaseUrl` to one described by the schema.prisma text
 * `to`, or '' when nothing differs. Only reads the database; `_prisma_migrations` is ignored.
 */
export async function databaseDiffSql(databaseUrl: string, to: string): Promise<string> {
  const pool = withCharAsText(new Pool({ connectionString: databaseUrl, max: 1 }));
  try {
    const connection = await new PrismaPg(pool).connect();
    // With a driver adapter, a schema's "datasource" is whatever database the adapter reaches
    // (`url` targets are refused by this engine); configDir only locates SQLite files and certificates.
    const from: DiffTarget = { tag: 'schemaDatasource', ...schemaFiles(to), configDir: process.cwd() };
    return await diff(
      engineAdapter((query) => connection.queryRaw(query)),
      from,
      to,
    );
  } finally {
    await pool.end();
  }
}

async function diff(adapter: object, from: DiffTarget, to: string): Promise<string> {
  const engine = await loadSchemaEngine().new({ datamodels: undefined }, () => undefined, adapter);
  try {
    const result = await engine.diff({
      from,
      to: { tag: 'schemaDatamodel', ...schemaFiles(to) },
      script: true,
      // Makes the engine say whether anything differs (exit code 2), instead of us parsing its
      // "-- This is an empty migration." placeholder.
      exitCode: true,
      filters: { externalTables: [], externalEnums: [] },
    });
    return result.exitCode === 2 ? (result.stdout ?? '') : '';
  } finally {
    engine.free();
  }
}

function schemaFiles(content: string) {
  return { files: [{ path: 'schema.prisma', content }] };
}

let engineClass: typeof SchemaEngine | undefined;

/** Compiling the 5 MB wasm takes a moment: once per module registry (each Jest test file has its own). */
function loadSchemaEngine(): typeof SchemaEngine {
  if (engineClass) return engineClass;
  const gluePath = require.resolve('@prisma/schema-engine-wasm/schema_engine_bg');
  // The package's entry imports the .wasm as an ES module, which Node 20 cannot do without
  // --experimental-wasm-modules; its JS glue is an ES module too, and Jest on Node 20 refuses to
  // load ES modules through require, createRequire or import(). The glue's only module syntax is
  // `export function|class`, so we run it as a plain function body and wire the wasm by hand, as
  // Prisma's own loader does (`__wbg_set_wasm`, then `__wbindgen_start`).
  const source = readFileSync(gluePath, 'utf8');
  const names = [...source.matchAll(/^export (?:function|class) (\w+)/gm)].map((match) => match[1]);
  const body = source.replace(/^export (?=function |class )/gm, '');
  if (/^\s*(?:export|import)\b/m.test(body)) {
    throw new Error(`${gluePath} has module syntax this loader does not handle; update schema-sql.ts`);
  }
  const glue = new Function(`${body}\nreturn { ${names.join(', ')} };`)() as {
    SchemaEngine: typeof SchemaEngine;
    __wbg_set_wasm(exports: object): void;
  };
  const wasm = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(path.join(path.dirname(gluePath), 'schema_engine_bg.wasm'))), {
    './schema_engine_bg.js': glue,
  });
  glue.__wbg_set_wasm(wasm.exports);
  (wasm.exports.__wbindgen_start as () => void)();
  engineClass = glue.SchemaEngine;
  return engineClass;
}

type Result<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * A driver adapter factory in the shape the engine calls: every method returns a Result instead of
 * throwing (what @prisma/driver-adapter-utils' binder does; that package is not ours to import).
 * Only `queryRaw` reaches a database: a diff never writes, so writes and shadow databases are refused.
 */
function engineAdapter(queryRaw: (query: SqlQuery) => Promise<SqlResultSet>): object {
  const errors: unknown[] = [];
  const capture =
    <A extends unknown[], T>(call: (...args: A) => Promise<T>) =>
    async (...args: A): Promise<Result<T>> => {
      try {
        return { ok: true, value: await call(...args) };
      } catch (error) {
        // adapter-pg's DriverAdapterError carries a structured cause (a PostgreSQL error code, ...).
        if (error instanceof Error && error.name === 'DriverAdapterError' && typeof error.cause === 'object') {
          return { ok: false, error: error.cause };
        }
        errors.push(error);
        return { ok: false, error: { kind: 'GenericJs', id: errors.length - 1 } };
      }
    };
  const refuse = async (): Promise<never> => {
    throw new Error('a diff only reads, but the schema engine asked to write or for a shadow database');
  };
  const identity = { provider: 'postgres', adapterName: '@prisma/adapter-pg' };
  const connection = {
    ...identity,
    queryRaw: capture(queryRaw),
    executeRaw: capture(refuse),
    executeScript: capture(refuse),
    startTransaction: capture(refuse),
    dispose: capture(async () => undefined),
  };
  return {
    ...identity,
    errorRegistry: { consumeError: (id: number) => ({ error: errors[id] }) },
    connect: capture(async () => connection),
    connectToShadowDb: capture(refuse),
  };
}

// The engine starts every command by asking the server for its version, even a diff between two
// schema files. Answering it as PostgreSQL 15 (what Herald runs on) keeps that diff database-free;
// any other query would be a real read, which must not happen there.
const POSTGRES_VERSION_NUM = 150000;
const COLUMN_TYPE = { int32: 0, boolean: 5, text: 7 } as const; // @prisma/driver-adapter-utils' ColumnTypeEnum

async function answerVersionProbe(query: SqlQuery): Promise<SqlResultSet> {
  if (!/\bversion\(\)/.test(query.sql)) throw new Error(`schemaDiffSql uses no database, but the engine asked: ${query.sql}`);
  return {
    columnNames: ['exists', 'version', 'numeric_version'],
    columnTypes: [COLUMN_TYPE.boolean, COLUMN_TYPE.text, COLUMN_TYPE.int32],
    rows: [[true, 'PostgreSQL 15', POSTGRES_VERSION_NUM]],
  };
}

const PG_CHAR_OID = 18;
const PG_TEXT_OID = 25;

/**
 * adapter-pg rejects PostgreSQL's one-byte "char" type, which the engine's catalog queries return
 * (pg_constraint.contype, ...). pg hands its value over as a string already; relabelling the column
 * as text before adapter-pg maps the types is all it takes.
 */
function withCharAsText(pool: Pool): Pool {
  const query = pool.query.bind(pool) as (config: QueryConfig) => Promise<QueryResult>;
  pool.query = (async (config: QueryConfig) => {
    const result = await query(config);
    for (const field of result.fields) if (field.dataTypeID === PG_CHAR_OID) field.dataTypeID = PG_TEXT_OID;
    return result;
  }) as Pool['query'];
  return pool;
}
