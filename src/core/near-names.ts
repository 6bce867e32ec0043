// Pure: names one slip of the keyboard away from each other (a letter added, dropped, changed, two swapped, or only
// the case different), so a command that creates on first use can tell a new name from a mistyped existing one.

/** Whether `a` and `b` differ by at most one edit (Damerau-Levenshtein, adjacent swaps counted as one) or only in case; equal names are not "near". */
export function oneEditAway(a: string, b: string): boolean {
  if (a === b) return false;
  if (a.toLowerCase() === b.toLowerCase()) return true;
  if (Math.abs(a.length - b.length) > 1) return false;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (a.length === b.length) {
    // One change at i, or i and i+1 swapped; the rest the same.
    if (a.slice(i + 1) === b.slice(i + 1)) return true;
    return a[i] === b[i + 1] && a[i + 1] === b[i] && a.slice(i + 2) === b.slice(i + 2);
  }
  // One letter more in the longer one, at i.
  const [short, long] = a.length < b.length ? [a, b] : [b, a];
  return short.slice(i) === long.slice(i + 1);
}

/** Below this length every name is one edit from every other (`a`, `b`, `t`): a short name is taken as meant. */
const MIN_GUARDED = 3;

/** The existing names `name` could be a slip for (none when it is one of them, or when it is shorter than 3). */
export function nearNames(name: string, existing: readonly string[]): string[] {
  if (existing.includes(name) || name.length < MIN_GUARDED) return [];
  return existing.filter((e) => oneEditAway(name, e));
}
