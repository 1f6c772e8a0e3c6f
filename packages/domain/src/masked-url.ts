/** What stands for each value of a masked query string. */
const MASKED_QUERY_VALUE = '***';

/**
 * The URL as the delivery history may show it: merchants put tokens in query strings
 * (`?token=…`), so every value is replaced by `***` (a parameter without `=` too: it may be a
 * bare token) and the names stay, verbatim. The fragment, never sent, is dropped.
 */
export function maskQueryValues(url: string): string {
  const [sent = ''] = url.split('#', 1);
  const queryStart = sent.indexOf('?');
  if (queryStart < 0) return sent;
  const masked = sent
    .slice(queryStart + 1)
    .split('&')
    .map((part) => {
      const equals = part.indexOf('=');
      if (equals < 0) return part === '' ? part : MASKED_QUERY_VALUE;
      return equals === part.length - 1 ? part : `${part.slice(0, equals + 1)}${MASKED_QUERY_VALUE}`;
    })
    .join('&');
  return `${sent.slice(0, queryStart + 1)}${masked}`;
}
