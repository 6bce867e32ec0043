// Which refs of the host repo are the person's own (untrusted-by-origin): the one rule for what the push gate counts as
// already the user's, what a fetch takes a sandbox to have, what promotion follows and what a clone is shown. Pure.

/**
 * Namespaces sbx writes in the host repo for sandboxes, never the person: ref sync's copy of each live sandbox's
 * branches (`refs/remotes/sandbox-<name>/*`), an earlier sandbox's refs set aside when its name is used again
 * (`refs/sbx-retired/*`), and every other `refs/sbx-*` or `refs/sbx/*` of sbx's bookkeeping. Compared without case: a
 * case-folding filesystem holds `refs/SBX-retired/x` and `refs/sbx-retired/x` as one file.
 */
const SBX_NAMESPACES = ["refs/remotes/sandbox-", "refs/sbx-", "refs/sbx/"] as const;

/**
 * Whether a host ref is one the person made (their branches, tags, their remotes' tracking refs, stash, notes): a
 * commit only other refs reach was made or moved on a sandbox's behalf, and counts as nobody's.
 */
export function isUserRef(ref: string): boolean {
  if (!ref.startsWith("refs/")) return false;
  const folded = ref.toLowerCase();
  return !SBX_NAMESPACES.some((p) => folded.startsWith(p));
}
