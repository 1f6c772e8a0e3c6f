import { Client } from 'pg';

/**
 * The structure of a database's `public` schema as sorted lines, one per fact (a table, a column
 * with its type, nullability and default, an index with its definition, a constraint with its
 * definition, an enum with its labels), so that two databases compare with a plain line diff.
 * `_prisma_migrations` is left out: it records history, not the model.
 */
export async function describeDatabase(databaseUrl: string): Promise<string[]> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const facts: string[] = [];
    for (const sql of Object.values(FACT_QUERIES)) {
      facts.push(...(await client.query<{ fact: string }>(sql)).rows.map((row) => row.fact));
    }
    return facts.sort();
  } finally {
    await client.end();
  }
}

/** The lines only one of two descriptions has, each marked with the side that has it. */
export function structureDifferences(left: { name: string; facts: string[] }, right: { name: string; facts: string[] }): string[] {
  const only = (a: string[], b: string[]) => a.filter((fact) => !b.includes(fact));
  return [
    ...only(left.facts, right.facts).map((fact) => `only in ${left.name}: ${fact}`),
    ...only(right.facts, left.facts).map((fact) => `only in ${right.name}: ${fact}`),
  ];
}

// Tables of the public schema we compare (regular and partitioned), without the history table.
// Partitions are left out: Prisma cannot describe partitioning, so schema.prisma describes each
// partitioned table as one table, and the partitions come and go with the partition maintenance.
const TABLES = `
  SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> '_prisma_migrations'`;

const FACT_QUERIES = {
  tables: `SELECT 'table ' || relname AS fact FROM (${TABLES}) t`,
  columns: `
    SELECT format('column %s.%s %s%s%s', t.relname, a.attname, format_type(a.atttypid, a.atttypmod),
                  CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE ' NULL' END,
                  coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')) AS fact
    FROM (${TABLES}) t
    JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_attrdef d ON d.adrelid = t.oid AND d.adnum = a.attnum`,
  indexes: `
    -- An index of a partitioned table reads "ON ONLY <table>" (it is built partition by partition):
    -- the same index as schema.prisma's on a plain table.
    SELECT format('index %s.%s: %s', t.relname, i.relname, replace(pg_get_indexdef(i.oid), ' ON ONLY ', ' ON ')) AS fact
    FROM (${TABLES}) t JOIN pg_index x ON x.indrelid = t.oid JOIN pg_class i ON i.oid = x.indexrelid`,
  constraints: `
    SELECT format('constraint %s.%s: %s', t.relname, c.conname, pg_get_constraintdef(c.oid)) AS fact
    -- A foreign key to a partitioned table also records one derived constraint per partition it
    -- references (conparentid set): the one declared is the fact, the derived ones follow from it.
    FROM (${TABLES}) t JOIN pg_constraint c ON c.conrelid = t.oid AND c.conparentid = 0`,
  enums: `
    SELECT format('enum %s: %s', ty.typname, string_agg(e.enumlabel, ', ' ORDER BY e.enumsortorder)) AS fact
    FROM pg_type ty JOIN pg_namespace n ON n.oid = ty.typnamespace JOIN pg_enum e ON e.enumtypid = ty.oid
    WHERE n.nspname = 'public' GROUP BY ty.typname`,
};
