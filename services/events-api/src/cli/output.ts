// How the CLI shows answers: aligned tables and `field  value` lines for people, or the API's JSON
// as it came (--json) for scripts.

/** One column of a table: its heading and how a row's cell is read. */
export interface Column {
  heading: string;
  cell: (row: Record<string, unknown>) => unknown;
}

/** A column reading one field (a dotted path into nested objects). */
export function column(heading: string, path: string): Column {
  return { heading, cell: (row) => valueAt(row, path) };
}

/** Rows under their headings, each column as wide as its widest cell; an empty list says so. */
export function table(rows: ReadonlyArray<Record<string, unknown>>, columns: readonly Column[]): string {
  if (rows.length === 0) return '(none)\n';
  const cells = [columns.map((c) => c.heading), ...rows.map((row) => columns.map((c) => text(c.cell(row))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  const lines = cells.map((line) =>
    line
      .map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
  return `${lines.join('\n')}\n`;
}

/** A page of a list answer (`{ page, pageSize, count, totalPages, data }`) as a table and a footer line. */
export function pageTable(body: unknown, columns: readonly Column[]): string {
  const page = body as { page: number; totalPages: number; count: number; data: Array<Record<string, unknown>> };
  const footer = page.count === 0 ? '' : `Page ${page.page} of ${Math.max(page.totalPages, 1)} (${page.count} in all)\n`;
  return table(page.data, columns) + footer;
}

/**
 * One record as `field  value` lines, nested objects flattened to dotted names
 * (`auth.mode`), lists joined with commas; a list of records after it as a table of its own.
 */
export function record(body: unknown, tables: Record<string, readonly Column[]> = {}): string {
  const lines: Array<[string, string]> = [];
  const flatten = (value: unknown, prefix: string): void => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const entries = Object.entries(value);
      if (entries.length === 0 && prefix !== '') lines.push([prefix, '-']);
      for (const [name, inner] of entries) {
        const path = prefix === '' ? name : `${prefix}.${name}`;
        if (!(path in tables)) flatten(inner, path);
      }
    } else {
      lines.push([prefix, text(value)]);
    }
  };
  flatten(body, '');
  const width = Math.max(0, ...lines.map(([name]) => name.length));
  const fields = lines.map(([name, value]) => `${name.padEnd(width)}  ${value}`.trimEnd());
  let out = `${fields.join('\n')}\n`;
  for (const [path, columns] of Object.entries(tables)) {
    const rows = valueAt(body, path);
    if (Array.isArray(rows)) out += `\n${path}:\n${table(rows as Array<Record<string, unknown>>, columns)}`;
  }
  return out;
}

/** An API problem (RFC 9457) as people read it: the status and detail, then each field's problem. */
export function problem(status: number, body: unknown): string {
  const p = (body ?? {}) as { title?: string; detail?: string; errors?: Array<Record<string, string | undefined>> };
  const head = `herald: the API answered ${status}${p.title ? ` ${p.title}` : ''}${p.detail ? `: ${p.detail}` : ''}\n`;
  const fields = (p.errors ?? []).map((e) => `  ${e.pointer ?? e.parameter ?? e.header ?? ''}: ${e.message ?? ''}\n`);
  return head + fields.join('');
}

function valueAt(value: unknown, path: string): unknown {
  return path
    .split('.')
    .reduce<unknown>((current, name) => (current !== null && typeof current === 'object' ? (current as Record<string, unknown>)[name] : undefined), value);
}

/** A cell: '-' for nothing, lists joined, and control characters (a merchant's text) made visible. */
function text(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map((item) => (typeof item === 'object' ? JSON.stringify(item) : String(item))).join(',');
  const shown = typeof value === 'object' ? JSON.stringify(value) : String(value);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matches control characters on purpose: a merchant's text shows them escaped, never sends them to the terminal
  return shown.replace(/[\u0000-\u001f\u007f]/g, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`));
}
