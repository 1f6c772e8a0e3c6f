/**
 * The known name a mistyped one most likely meant, or undefined when none is close: first a name
 * that differs only in case, `_` or `-` (`page_size` -> `pageSize`), else the nearest within one
 * edit per three characters, at most two (`orgin` -> `origin`), so short unrelated words match nothing.
 */
export function closestName(typed: string, known: readonly string[]): string | undefined {
  const wanted = normalise(typed);
  const same = known.find((name) => normalise(name) === wanted);
  if (same !== undefined) return same;
  const limit = Math.min(2, Math.floor(wanted.length / 3));
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(wanted, normalise(name));
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

function normalise(name: string): string {
  return name.toLowerCase().replaceAll(/[_-]/g, '');
}

/** Levenshtein distance (insertions, deletions and substitutions each count one). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
