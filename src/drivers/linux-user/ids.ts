// Which uid a new guest gets, and what a removed guest's uid still owns: pure parts of gone-when-removed.
//
// A guest's uid is never given out again while anything of it remains where sbx looks (the shared temp dirs): a new
// guest with that uid would own it. sbx picks the id itself (useradd --system alone hands the last removed guest's uid
// straight to the next), skipping every id an account or group has and every id held in `<root>/held/<id>`.
import { SbxError } from "../../core/errors";

export interface IdRange {
  min: number;
  max: number;
}

/** shadow-utils' own defaults for system accounts, when /etc/login.defs says nothing. */
export const SYS_ID_RANGE: IdRange = { min: 100, max: 999 };

/**
 * The shared dirs every user may write, where a guest's files outlive it: swept on removal, and looked at before a
 * held uid is given out again. (Landlock keeps a confined guest's writes to its home and the first three; a guest made
 * with `--allow-weaker` has no Landlock, so /run/lock too.)
 */
export const SHARED_TMP_DIRS = ["/tmp", "/var/tmp", "/dev/shm", "/run/lock"] as const;

/** Pure: SYS_UID_MIN/SYS_UID_MAX (and the GID pair: an id is taken as both) from /etc/login.defs text. */
export function parseSysIdRange(loginDefs: string): IdRange {
  const get = (k: string): number | undefined => {
    const m = new RegExp(`^\\s*${k}\\s+(\\d+)\\s*$`, "m").exec(loginDefs);
    return m ? Number(m[1]) : undefined;
  };
  const min = Math.max(get("SYS_UID_MIN") ?? SYS_ID_RANGE.min, get("SYS_GID_MIN") ?? SYS_ID_RANGE.min);
  const max = Math.min(get("SYS_UID_MAX") ?? SYS_ID_RANGE.max, get("SYS_GID_MAX") ?? SYS_ID_RANGE.max);
  return min >= 1 && min <= max ? { min, max } : SYS_ID_RANGE;
}

/** Pure: as useradd --system does, the highest id of the range that no account, group or hold has. */
export function pickGuestId(taken: ReadonlySet<number>, range: IdRange): number {
  for (let n = range.max; n >= range.min; n--) if (!taken.has(n)) return n;
  throw new SbxError("unavailable", `no free system user id left in ${range.min}–${range.max} for a new sandbox account`, {
    hint: "Remove sandboxes you no longer need (`sbx rm`, `sbx prune`); ids held for a removed sandbox's files are listed in /var/lib/sbx/held.",
  });
}

/** Pure: the ids of `getent passwd` and `getent group` output (third field). */
export function idsOf(getent: string): number[] {
  return getent.split("\n").flatMap((l) => {
    const f = l.split(":");
    const n = Number(f[2]);
    return f.length >= 3 && f[2] !== "" && Number.isInteger(n) ? [n] : [];
  });
}

/** A System V IPC object (`/proc/sysvipc/{shm,msg,sem}`): its kind's ipcrm flag, id, owner and creator. */
export interface IpcObject {
  flag: "-m" | "-q" | "-s";
  id: number;
  uid: number;
  cuid: number;
}

/** Pure: the rows of one `/proc/sysvipc/<kind>` file (its header names the columns). */
export function parseSysvIpc(kind: "shm" | "msg" | "sem", text: string): IpcObject[] {
  const [head = "", ...rows] = text.split("\n");
  const cols = head.trim().split(/\s+/);
  const at = (name: string) => cols.indexOf(name);
  const idCol = at(kind === "shm" ? "shmid" : kind === "msg" ? "msqid" : "semid");
  const [uidCol, cuidCol] = [at("uid"), at("cuid")];
  if (idCol < 0 || uidCol < 0 || cuidCol < 0) return [];
  const flag = kind === "shm" ? "-m" : kind === "msg" ? "-q" : "-s";
  return rows.flatMap((r) => {
    const f = r.trim().split(/\s+/);
    const [id, uid, cuid] = [Number(f[idCol]), Number(f[uidCol]), Number(f[cuidCol])];
    return r.trim() !== "" && [id, uid, cuid].every(Number.isInteger) ? [{ flag, id, uid, cuid } as IpcObject] : [];
  });
}

/** Pure: the lines of `find … -printf '%U %G %p\n'` as the held ids each path keeps (its uid, its gid, when in `ids`). */
export function leftoversOf(findOut: string, ids: ReadonlySet<number>): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const line of findOut.split("\n")) {
    const m = /^(\d+) (\d+) (.+)$/.exec(line);
    if (!m) continue;
    for (const id of new Set([Number(m[1]), Number(m[2])])) {
      if (!ids.has(id)) continue;
      const l = out.get(id) ?? [];
      l.push(m[3]!);
      out.set(id, l);
    }
  }
  return out;
}
