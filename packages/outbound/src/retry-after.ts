/** Retry-After (RFC 9110): delay-seconds or an HTTP date, in ms; undefined when absent or malformed. */
export function parseRetryAfter(value: unknown, now: number = Date.now()): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) || !/[a-z]/i.test(text) ? undefined : Math.max(0, date - now);
}
