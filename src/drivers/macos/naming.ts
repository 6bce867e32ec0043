// macOS sandbox naming: guest user `sbx_<host>_<id>`, the host's group, pf anchor `com.apple/sbx_<uid>`, and UID choice.
import { SbxError } from "../../core/errors";

/** Where sbx takes guest UIDs (and the per-host group's GID) from; never overlaps macOS's 501+ login users in practice. */
export interface IdRange {
  min: number;
  max: number;
}

export const DEFAULT_UID_RANGE: IdRange = { min: 7000, max: 7999 };

const ID = /^[a-z0-9]{1,20}$/;

/** The host user's name as it appears in guest names: lowercase alphanumerics only (`_` separates fields). */
export function hostTag(hostUser: string): string {
  const t = hostUser.toLowerCase().replace(/[^a-z0-9]/g, "").slice(0, 16);
  if (t.length === 0) throw new SbxError("config", `cannot derive a sandbox user prefix from host user '${hostUser}'`);
  return t;
}

export function guestUser(hostUser: string, id: string): string {
  if (!ID.test(id)) {
    throw new SbxError("internal", `sandbox id '${id}' is not usable in a macOS user name`, {
      hint: "Sandbox ids are short lowercase hex strings; this is a bug in sbx.",
    });
  }
  return `sbx_${hostTag(hostUser)}_${id}`;
}

/** The prefix every guest of this host user has; cleanup only ever looks at these. */
export function guestPrefix(hostUser: string): string {
  return `sbx_${hostTag(hostUser)}_`;
}

/** The sandbox id of a guest user of this host, or null for anything else. */
export function parseGuestUser(hostUser: string, user: string): string | null {
  const p = guestPrefix(hostUser);
  if (!user.startsWith(p)) return null;
  const id = user.slice(p.length);
  return ID.test(id) ? id : null;
}

/** The group every guest of one host user has as its primary group; sudoers lets the host run as its members. */
export function hostGroup(hostUser: string): string {
  return `sbx_${hostTag(hostUser)}`;
}

/** A direct child of com.apple: the stock pf.conf's `anchor "com.apple/*"` evaluates it (deeper ones never apply). */
export function anchorName(uid: number): string {
  return `com.apple/sbx_${uid}`;
}

export function parseAnchorName(anchor: string): number | null {
  const m = /^com\.apple\/sbx_(\d+)$/.exec(anchor.trim());
  return m ? Number(m[1]) : null;
}

/** The lowest id in `range` that no existing record uses; throws when the range is full. */
export function pickId(used: ReadonlySet<number>, range: IdRange, what: string): number {
  for (let n = range.min; n <= range.max; n++) if (!used.has(n)) return n;
  throw new SbxError("unavailable", `no free ${what} left in ${range.min}–${range.max}`, {
    hint: "Remove sandboxes you no longer need (`sbx rm`, `sbx prune`), or widen the reserved range in the config.",
  });
}

export function inRange(n: number, range: IdRange): boolean {
  return Number.isInteger(n) && n >= range.min && n <= range.max;
}
