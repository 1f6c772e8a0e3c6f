// HTML written with a tagged template that escapes every value put into it. The portal's pages are
// a handful of tables and forms: a template library (and its own syntax, loader and cache) would
// add more than it saves, while this keeps the one rule that matters in one place: nothing reaches
// the page unescaped unless it was itself built by `html`.

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** A piece of HTML built by `html` (or `join`), and so already safe to put into a page. */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** A value a template may hold: escaped text, safe HTML, a list of those, or nothing (null, undefined, false). */
type Value = SafeHtml | string | number | boolean | null | undefined | Date | readonly Value[];

/** Escapes text for an element's content or a quoted attribute value. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

function render(value: Value): string {
  if (value instanceof SafeHtml) return value.text;
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  if (value instanceof Date) return escapeHtml(value.toISOString());
  return escapeHtml(String(value));
}

/** The template tag: `html\`<td>${name}</td>\`` escapes `name`, keeps nested `html` as it is. */
export function html(strings: TemplateStringsArray, ...values: Value[]): SafeHtml {
  let text = strings[0]!;
  values.forEach((value, index) => {
    text += render(value) + strings[index + 1]!;
  });
  return new SafeHtml(text);
}
