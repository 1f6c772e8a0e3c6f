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

/**
 * A long text of each row (too long for a table cell), one row a line under `heading`, each led by
 * `label`; rows without it are left out, and nothing at all is printed when no row has it.
 */
export function longTexts(rows: unknown, heading: string, label: (row: Record<string, unknown>) => string, path: string): string {
  if (!Array.isArray(rows)) return '';
  const lines = (rows as Array<Record<string, unknown>>)
    .filter((row) => valueAt(row, path) !== null && valueAt(row, path) !== undefined && valueAt(row, path) !== '')
    .map((row) => `  ${label(row)}  ${text(valueAt(row, path))}`);
  return lines.length === 0 ? '' : `\n${heading}:\n${lines.join('\n')}\n`;
}

/**
 * The CLI's flag for each field or query parameter of the admin API it sends, so that an answer
 * about `programId` speaks of `--program`: the person typed flags, not the API's names.
 */
const FLAG_OF_FIELD: Readonly<Record<string, string>> = {
  programId: '--program',
  merchantId: '--merchant',
  eventId: '--event',
  targetId: '--target',
  createdFrom: '--created-from',
  createdTo: '--created-to',
  status: '--status',
  page: '--page',
  pageSize: '--page-size',
  limit: '--limit',
  name: '--name',
  id: '--id',
  url: '--url',
  auth: '--auth',
  mode: '--auth',
  username: '--username',
  password: '--password-stdin',
  authUrl: '--auth-url',
  tokenRequest: '--token-request',
  scope: '--scope',
  objectTypes: '--object-types',
  eventTypes: '--event-types',
  ordering: '--ordering',
  verify: '--no-verify',
  attempts: '--attempts',
  maxBackoffMs: '--max-backoff-ms',
  timeoutMs: '--timeout-ms',
  maxInFlight: '--max-in-flight',
};
// Inside free text only the API's camelCase names are replaced: plain words (status, name, url)
// are also ordinary English there.
const CAMEL_CASE_FIELDS = new RegExp(
  `\\b(${Object.keys(FLAG_OF_FIELD)
    .filter((name) => /[A-Z]/.test(name))
    .join('|')})\\b`,
  'g',
);

/** The API's words in `text` as the CLI's: its camelCase field names and `?verify=false` become flags. */
function inCliWords(text: string): string {
  return text.replace(/\?verify=false/g, '--no-verify').replace(CAMEL_CASE_FIELDS, (name) => FLAG_OF_FIELD[name]!);
}

/** What an error of a problem is about, as the CLI names it: a flag, or the API's name when no flag sets it; '' for the whole request. */
function subjectOf(error: Record<string, string | undefined>): string {
  if (error.header !== undefined) return `header ${error.header}`;
  const field =
    error.parameter ??
    (error.pointer ?? '')
      .split('/')
      .filter((segment) => segment !== '' && !/^\d+$/.test(segment))
      .at(-1) ??
    '';
  return FLAG_OF_FIELD[field] ?? field;
}

/**
 * An API problem (RFC 9457) as people at the CLI read it: the status and title, the problem of each
 * flag (one a line), then what the detail says beyond them (a hint: what to do instead). The API's
 * field names are shown as the flags that set them.
 */
export function problem(status: number, body: unknown): string {
  const p = (body ?? {}) as { title?: string; detail?: string; errors?: Array<Record<string, string | undefined>> };
  const title = p.title ? ` ${p.title}` : '';
  // The detail often begins with the title ("Invalid query parameter: Invalid query parameter: …" otherwise).
  const detail = inCliWords((p.detail ?? '').replace(p.title ? `${p.title}: ` : '', ''));
  const errors = (p.errors ?? []).map((e) => {
    const subject = subjectOf(e);
    const message = inCliWords(e.message ?? '');
    // "--created-to: --created-to is required …" says its subject once.
    return { message, line: subject === '' || message.startsWith(`${subject} `) ? message : `${subject}: ${message}` };
  });
  if (errors.length === 0) return `herald: the API answered ${status}${title}${detail ? `: ${detail}` : ''}\n`;
  // The detail's sentences that only repeat an error are left out; a hint is kept.
  const hints = detail
    .split(/(?<=\.)\s+(?=[A-Z])/)
    .filter((sentence) => sentence !== '' && !errors.some((e) => e.message !== '' && sentence.includes(e.message)));
  const lines = [`herald: the API answered ${status}${title}`, ...errors.map((e) => `  ${e.line}`), ...hints];
  return `${lines.join('\n')}\n`;
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
