// A dir only this user may use (the runtime dir: control socket, daemon lock, every sandbox's socket dir), made or
// taken without following a link. Its fallback, /tmp/sbx-<uid>, sits where every account can write: another one can be
// there first with a symlink (so a check through it passes, a mode change lands on the target, and the link can be
// pointed elsewhere later) or with a dir of its own. Both are refused, never used.
import { closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, statSync, type Stats } from "node:fs";
import { dirname } from "node:path";
import { SbxError } from "../core/errors";

function refuse(dir: string, what: string, uid: number): SbxError {
  return new SbxError("permission", `${dir} ${what}; sbx keeps its sockets only in a dir of its own (uid ${uid}, mode 0700)`, {
    hint: `Another account may be trying to intercept sbx's sockets. Look at it (\`ls -ld ${dir}\`), have it removed (by its owner, or root), or set XDG_RUNTIME_DIR to a dir of your own.`,
  });
}

function checkParent(dir: string, uid: number): void {
  const parent = dirname(dir);
  const p = statSync(parent);
  if (p.uid !== 0 && p.uid !== uid) throw refuse(dir, `is in ${parent}, which belongs to uid ${p.uid} (it could swap the dir)`, uid);
  if ((p.mode & 0o022) !== 0 && (p.mode & 0o1000) === 0) throw refuse(dir, `is in ${parent}, which others can write and is not sticky (they could swap the dir)`, uid);
}

/**
 * What a client checks before it speaks to a socket in `dir` (the CLI, before the control socket): when the dir is
 * there, it is a dir (no link) of `uid`'s that no one else can write, in a parent no one else can swap it in; else an
 * SbxError naming it. A dir that is not there yet is fine (the daemon makes it); nothing is changed.
 */
export function checkPrivateDir(dir: string, uid: number): void {
  let st: Stats;
  try {
    st = lstatSync(dir);
  } catch {
    return;
  }
  if (st.isSymbolicLink()) throw refuse(dir, `is a symlink (made by uid ${st.uid})`, uid);
  if (!st.isDirectory()) throw refuse(dir, `is not a directory (made by uid ${st.uid})`, uid);
  if (st.uid !== uid) throw refuse(dir, `belongs to uid ${st.uid}, not you (uid ${uid})`, uid);
  if ((st.mode & 0o022) !== 0) throw refuse(dir, `can be written by others (mode ${(st.mode & 0o777).toString(8)})`, uid);
  checkParent(dir, uid);
}

/**
 * Makes `dir` (mode 0700, owned by `uid`) or takes the one there, never through a link: a symlink, anything but a
 * dir, a dir of another uid, or a parent that others could rename it in (writable by others and not sticky, or owned
 * by another non-root uid) is refused with an SbxError that names the path. A dir of ours with a looser mode is
 * tightened through a descriptor opened without following links.
 */
export function ensurePrivateDir(dir: string, uid: number): void {
  const parent = dirname(dir);
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  checkParent(dir, uid);
  try {
    // mkdir never follows a link at its last component: a planted one answers EEXIST, and is seen below.
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) throw refuse(dir, `is a symlink (made by uid ${st.uid})`, uid);
  if (!st.isDirectory()) throw refuse(dir, `is not a directory (made by uid ${st.uid})`, uid);
  if (st.uid !== uid) throw refuse(dir, `belongs to uid ${st.uid}, not you (uid ${uid})`, uid);
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (e) {
    throw refuse(dir, `changed while sbx looked at it (${(e as NodeJS.ErrnoException).code ?? "error"})`, uid);
  }
  try {
    const now: Stats = fstatSync(fd);
    if (now.ino !== st.ino || now.dev !== st.dev || now.uid !== uid) throw refuse(dir, "changed while sbx looked at it", uid);
    if ((now.mode & 0o077) !== 0) fchmodSync(fd, 0o700);
  } finally {
    closeSync(fd);
  }
}
