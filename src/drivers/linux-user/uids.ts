// A guest's uid, from the account's making to after its removal: an id no earlier owner's files come with, its
// processes killed, and what a removed guest's uid still owns swept (as the guest) or the id held until it is gone.
import { join } from "node:path";
import { SbxError } from "../../core/errors";
import type { SandboxSpec } from "../../core/spec";
import { getUser, GUEST_PRIVS, type Passwd } from "./accounts";
import { readTable } from "./firewall";
import { idsOf, leftoversOf, parseSysIdRange, parseSysvIpc, pickGuestId } from "./ids";
import type { GuestSystem } from "./layout";

/**
 * As root, in a mount namespace of its own: the IPC namespace's POSIX message queues mounted at $1, and those of uid $2
 * deleted (the queue filesystem is flat: no dir or link to be led through).
 */
export const MQUEUE_SCRIPT = 'mount -t mqueue mqueue "$1" && find "$1" -mindepth 1 -maxdepth 1 -type f -uid "$2" -delete';

/** Process states of a process that still runs (every state but Z, a zombie, and X, dead). */
const LIVE_STATES = "R,S,D,T,t,I";

/**
 * The account, with a uid sbx picks: useradd --system alone gives the last removed guest's uid to the next, and with
 * it whatever that guest left. An id taken meanwhile (useradd exits 4) is picked again.
 * runs: (freeId) …; useradd --system --uid <id> --user-group --shell /bin/bash --home-dir <home> --no-create-home --comment … <guest>
 */
export async function createUser(sys: GuestSystem, spec: SandboxSpec, guest: string): Promise<Passwd> {
  for (let attempt = 1; ; attempt++) {
    const id = await freeId(sys);
    const r = await sys.exec.run(
      ["useradd", "--system", "--uid", String(id), "--user-group", "--shell", "/bin/bash", "--home-dir", sys.layout.home(guest), "--no-create-home", "--comment", `sbx sandbox ${spec.name}`, guest],
      { check: false },
    );
    if (r.exitCode === 4 && attempt < 4) continue;
    if (r.exitCode !== 0) throw new SbxError("exec_failed", `useradd ${guest} (uid ${id}) failed: ${r.stderr.trim() || `exit ${r.exitCode}`}`);
    const pw = await getUser(sys, guest);
    if (!pw) throw new SbxError("internal", `useradd succeeded but ${guest} is not in the user database`);
    return pw;
  }
}

/**
 * An id no account or group has, no removed guest's files hold and no rule of sbx's table names, in the system range
 * of /etc/login.defs.
 * runs: getent passwd; getent group; cat /etc/login.defs; (heldIds) …; nft -j list table inet <table>
 */
async function freeId(sys: GuestSystem): Promise<number> {
  const [pw, gr, defs] = await Promise.all([
    sys.exec.run(["getent", "passwd"], { check: false }),
    sys.exec.run(["getent", "group"], { check: false }),
    sys.exec.run(["cat", "/etc/login.defs"], { check: false }),
  ]);
  const taken = new Set([...idsOf(pw.stdout), ...idsOf(gr.stdout), ...(await heldIds(sys))]);
  // A uid the firewall still names (a removal that stopped before its rules went) would get that sandbox's rules.
  for (const c of (await readTable(sys)).chains.values()) for (const u of [...c.uids, ...c.inUids, ...c.natUids, ...(c.rules ? [c.rules.uid] : [])]) taken.add(u);
  const range = parseSysIdRange(defs.exitCode === 0 ? defs.stdout : "");
  // An id that owns files in the shared temp dirs already (as owner or group: a guest of another sbx root, one removed
  // before sbx swept, a system account removed by hand) would hand them to the new guest: it is held instead, like a
  // removed guest's, and the next id is tried.
  for (let tries = 0; tries < 32; tries++) {
    const id = pickGuestId(taken, range);
    const left = await leftovers(sys, new Set([id]));
    if (left.size === 0) return id;
    await hold(sys, left);
    taken.add(id);
  }
  throw new SbxError("unavailable", "no free system user id without files of an earlier owner in the shared temp dirs", {
    hint: `See the ids held in ${sys.layout.heldDir} and the files each lists; remove those files, then try again.`,
  });
}

/**
 * The ids held for a removed guest's files: each is looked at again, and one whose files are all gone is let go.
 * runs: find <held> -mindepth 1 -maxdepth 1 -printf '%f\n'; (leftovers) …; rm -f <held>/<id>
 */
export async function heldIds(sys: GuestSystem): Promise<Set<number>> {
  const r = await sys.exec.run(["find", sys.layout.heldDir, "-mindepth", "1", "-maxdepth", "1", "-printf", "%f\n"], { check: false });
  const ids = new Set(r.stdout.split("\n").filter((l) => /^\d{1,10}$/.test(l)).map(Number));
  if (ids.size === 0) return ids;
  const left = await leftovers(sys, ids);
  for (const id of ids) {
    if (left.has(id)) continue;
    await sys.exec.run(["rm", "-f", "--", join(sys.layout.heldDir, String(id))], { check: false });
    ids.delete(id);
  }
  return ids;
}

/**
 * What `ids` still own (as file owner or group) in the shared temp dirs, looked at as root without changing anything.
 * runs: find <tmp dirs> -xdev ( -uid <id> -o -gid <id> … ) -printf '%U %G %p\n'
 */
async function leftovers(sys: GuestSystem, ids: ReadonlySet<number>): Promise<Map<number, string[]>> {
  const test = [...ids].flatMap((id, i) => [...(i > 0 ? ["-o"] : []), "-uid", String(id), "-o", "-gid", String(id)]);
  const r = await sys.exec.run(["find", ...sys.tmpDirs, "-xdev", "(", ...test, ")", "-printf", "%U %G %p\n"], { check: false, timeoutMs: 120_000 });
  return leftoversOf(r.stdout, ids);
}

/**
 * What a removed guest's uid owns outside its home: its files in the shared temp dirs, deleted AS THE GUEST (the
 * kernel then lets it delete only what the guest itself could: a link it planted is removed, never followed, and a
 * rename race can lead it nowhere the guest could not go), and its System V IPC objects (removed by id, as root). What
 * is left (a file in a dir the guest may no longer write, a dir it made unreadable to itself) holds its uid and gid in
 * `<root>/held`. Runs while the account still exists, so no new guest can get the id in between.
 * runs: setpriv --reuid=<uid> --regid=<gid> --clear-groups <GUEST_PRIVS> -- env -i PATH=/usr/bin:/bin find <tmp dirs> -xdev -uid <uid> -type d ! -perm -u=rwx -exec chmod u+rwx {} ;
 *       (the same) find <tmp dirs> -xdev -uid <uid> -delete; install -d … <root>/mqueue; unshare --mount … sh -c
 *       <MQUEUE_SCRIPT> (mount -t mqueue; find -uid <uid> -delete); cat /proc/sysvipc/{shm,msg,sem}; ipcrm -m|-q|-s <id>;
 *       (leftovers) …; (hold) …
 */
export async function sweep(sys: GuestSystem, uid: number, gid: number): Promise<void> {
  const asGuest = (argv: string[]) => ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", ...GUEST_PRIVS, "--", "env", "-i", "PATH=/usr/bin:/bin", ...argv];
  const mine = ["find", ...sys.tmpDirs, "-xdev", "-uid", String(uid)];
  // A dir of its own it made unreadable or unwritable to itself would stop the delete: opened first, one at a time, so
  // find goes on into what it just opened.
  await sys.exec.run(asGuest([...mine, "-type", "d", "!", "-perm", "-u=rwx", "-exec", "chmod", "u+rwx", "{}", ";"]), { check: false, timeoutMs: 120_000 });
  await sys.exec.run(asGuest([...mine, "-delete"]), { check: false, timeoutMs: 120_000 });
  // POSIX message queues live in the IPC namespace's own filesystem, which nothing need have mounted: mounted in a
  // mount namespace of this command's, the uid's queues go (a flat filesystem: no dir or link to be led through).
  const mqueue = join(sys.layout.root, "mqueue");
  await sys.exec.run(["install", "-d", "-m", "0700", "-o", "root", "-g", "root", mqueue]);
  await sys.exec.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", MQUEUE_SCRIPT, "sbx-mqueue", mqueue, String(uid)], { check: false });
  for (const kind of ["shm", "msg", "sem"] as const) {
    const r = await sys.exec.run(["cat", `/proc/sysvipc/${kind}`], { check: false });
    for (const o of parseSysvIpc(kind, r.exitCode === 0 ? r.stdout : "")) {
      if (o.uid === uid || o.cuid === uid) await sys.exec.run(["ipcrm", o.flag, String(o.id)], { check: false });
    }
  }
  const left = await leftovers(sys, new Set([uid, gid]));
  if (left.size > 0) await hold(sys, left);
}

/**
 * Holds each id in `<root>/held/<id>`, listing (some of) the files that keep it, and says so.
 * runs: install -d -m 0700 -o root -g root <held>; tee <held>/<id>
 */
async function hold(sys: GuestSystem, left: ReadonlyMap<number, string[]>): Promise<void> {
  await sys.exec.run(["install", "-d", "-m", "0700", "-o", "root", "-g", "root", sys.layout.heldDir]);
  for (const [id, paths] of left) {
    await sys.exec.run(["tee", join(sys.layout.heldDir, String(id))], { stdin: `${paths.slice(0, 20).join("\n")}\n` });
    sys.warn(`id ${id} still owns ${paths.length} file(s) (${paths.slice(0, 3).join(", ")}${paths.length > 3 ? ", …" : ""}): no new sandbox gets it until they are gone`);
  }
}

/**
 * Kills every process of the guest UID (these processes belong to the account sbx made). Zombies are not counted:
 * they are dead already, waiting for init to reap them (which, on a loaded machine, may come after we look).
 * runs: pgrep -u <uid> --runstates R,S,D,T,t,I; pkill -KILL -u <uid>
 */
export async function killGuest(sys: GuestSystem, uid: number): Promise<boolean> {
  let killed = false;
  for (let i = 0; i < 20; i++) {
    const r = await sys.exec.run(["pgrep", "-u", String(uid), "--runstates", LIVE_STATES], { check: false });
    if (r.exitCode !== 0) return killed;
    await sys.exec.run(["pkill", "-KILL", "-u", String(uid)], { check: false });
    killed = true;
    await Bun.sleep(Math.min(10 * (i + 1), 100));
  }
  throw new SbxError("unavailable", `processes of uid ${uid} kept running after SIGKILL`, {
    hint: "Check `ps -u " + uid + "` for processes stuck in the kernel (D state) and try again.",
  });
}
