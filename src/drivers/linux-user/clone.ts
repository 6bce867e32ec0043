// The guest's clone of the host repo, made once by the host user in a root-owned staging dir and handed to the guest,
// and its read-only view of the host's objects (a bind mount under a dir only this guest may traverse).
import { basename, dirname, join } from "node:path";
import { SbxError } from "../../core/errors";
import type { HostUser, SandboxSpec } from "../../core/spec";
import { parseHostGitSetup } from "../../workspace/clone";
import { readMeta, type GuestMeta, type Passwd } from "./accounts";
import type { GuestSystem } from "./layout";

/** As the host user: their objects dir's `info/alternates` exists (appended nothing: a list that is there stays). */
export const ENSURE_LIST = 'mkdir -p "$1/info" && : >> "$1/info/alternates"';

/** runs: setpriv --reuid=<host uid> --regid=<host gid> --init-groups --reset-env -- <argv> (or argv as is for root) */
function asHost(host: HostUser, argv: string[]): string[] {
  if (host.uid === 0) return argv;
  return ["setpriv", `--reuid=${host.uid}`, `--regid=${host.gid}`, "--init-groups", "--reset-env", "--", ...argv];
}

/**
 * The guest's clone, made once: the host user clones (`--shared`) into a root-owned staging dir, root writes
 * the alternates, hands the tree to the guest and moves it into the home. The guest reaches the host's objects
 * read-only through ACLs on exactly the dirs it must traverse and the objects tree; these paths are recorded
 * in the meta file first, so removal (or prune after a crash) can take the ACLs back.
 */
export async function ensureWorkspace(sys: GuestSystem, spec: SandboxSpec, pw: Passwd): Promise<boolean> {
  const { exec, layout } = sys;
  const ws = layout.workspace(spec);
  const have = await exec.run(["stat", "-c", "%u", join(ws, ".git")], { check: false });
  const meta = await readMeta(sys, spec.id);
  if (have.exitCode === 0 && have.stdout.trim() === String(pw.uid) && meta?.uid === pw.uid && meta.objects) {
    return ensureObjectsMount(sys, pw, spec.hostUser, spec.id, meta.objects);
  }
  if (have.exitCode === 0) {
    throw new SbxError("conflict", `sandbox ${spec.name}: ${ws} exists but is not the guest's clone`, {
      hint: `Remove the sandbox with \`sbx rm ${spec.name}\` and create it again.`,
    });
  }
  const host = spec.hostUser;

  // runs: git -C <repo> rev-parse --path-format=absolute --git-common-dir (as the host user); realpath -e <objects>
  const common = await exec.run(asHost(host, ["git", "-C", spec.repo, "rev-parse", "--path-format=absolute", "--git-common-dir"]));
  const objects = (await exec.run(["realpath", "-e", join(common.stdout.trim(), "objects")])).stdout.trim();

  const record: GuestMeta = { id: spec.id, name: spec.name, repo: spec.repo, user: pw.name, uid: pw.uid, gid: pw.gid, traverse: [], objects, dir: spec.dir };
  // runs: tee <root>/meta/<id>.json (first, so removal after a crash knows which ACLs to take back)
  await exec.run(["tee", layout.metaFile(spec.id)], { stdin: JSON.stringify(record) + "\n" });
  // runs: setfacl -R -m u:<guest>:rX,d:u:<guest>:rX <objects>
  await exec.run(["setfacl", "-R", "-m", `u:${pw.uid}:rX,d:u:${pw.uid}:rX`, objects]);
  await ensureObjectsMount(sys, pw, host, spec.id, objects);

  // Stage: <stage>/<id> is the host's for the clone; nothing of the guest's is on this path.
  const stage = join(layout.stageDir, spec.id);
  const staged = join(stage, basename(spec.repo));
  await exec.run(["rm", "-rf", "--one-file-system", stage]);
  await exec.run(["install", "-d", "-m", "0700", "-o", String(host.uid), "-g", String(host.gid), stage]);
  await exec.run(asHost(host, ["git", "clone", "--quiet", "--shared", spec.repo, staged]));
  // Remotes as in every sandbox: `host` is the host repo (its refs arrive as refs/remotes/host/* by ref sync), `origin`
  // is the host's origin URL, so `git push origin` inside goes to the shim and the bridge. Still the host's tree here.
  // Every host remote under its name (the bridge pushes with the host's URL and token) and who commits: the host's.
  // runs (as the host user): git -C <staged> remote rename origin host; git -C <repo> config --get-regexp <remotes,
  //   identity>; git -C <staged> config user.name/email; git -C <staged> remote add <r> <url>;
  //   git -C <staged> fetch --quiet --no-tags host +refs/remotes/<r>/*:refs/remotes/<r>/*
  await exec.run(asHost(host, ["git", "-C", staged, "remote", "rename", "origin", "host"]));
  const cfg = await exec.run(asHost(host, ["git", "-C", spec.repo, "config", "--get-regexp", "^(remote\\..*\\.url|user\\.(name|email))$"]), { check: false });
  const setup = parseHostGitSetup(cfg.exitCode === 0 ? cfg.stdout : "");
  if (setup.name !== undefined) await exec.run(asHost(host, ["git", "-C", staged, "config", "user.name", setup.name]));
  if (setup.email !== undefined) await exec.run(asHost(host, ["git", "-C", staged, "config", "user.email", setup.email]));
  const remotes = Object.keys(setup.remotes).sort();
  for (const r of remotes) await exec.run(asHost(host, ["git", "-C", staged, "remote", "add", r, setup.remotes[r]!]));
  if (remotes.length > 0) {
    await exec.run(asHost(host, ["git", "-C", staged, "fetch", "--quiet", "--no-tags", "host", ...remotes.map((r) => `+refs/remotes/${r}/*:refs/remotes/${r}/*`)]), { check: false });
  }
  await exec.run(["tee", join(staged, ".git", "objects", "info", "alternates")], { stdin: `${layout.objectsMount(spec.id)}\n` });
  await exec.run(["chown", "-R", "--no-dereference", `${pw.uid}:${pw.gid}`, staged]);
  if (host.uid !== 0) {
    await exec.run(["setfacl", "-R", "-m", `u:${host.uid}:rwX,d:u:${host.uid}:rwX,m::rwX`, staged]);
  }
  // <home>/work is made by root (0770 keeps the ACL mask open for the host; the group entry stays ---).
  const work = dirname(ws);
  const w = await exec.run(["stat", "-c", "%F %u", work], { check: false });
  if (w.exitCode !== 0) {
    await exec.run(["install", "-d", "-m", "0770", "-o", String(pw.uid), "-g", String(pw.gid), work]);
  } else if (w.stdout.trim() !== `directory ${pw.uid}`) {
    throw new SbxError("conflict", `sandbox ${spec.name}: ${work} is not a directory owned by ${pw.name}`, {
      hint: `Remove the sandbox with \`sbx rm ${spec.name}\` and create it again.`,
    });
  }
  await exec.run(["mv", "-T", staged, ws]);
  await exec.run(["rmdir", stage]);
  return true;
}

/**
 * The host's objects dir, bind-mounted read-only under a root-owned dir only this guest may traverse. The
 * guest thus needs no ACL on any dir of the host's home (a traverse ACL there would let it open every
 * world-readable file whose name it guesses, such as ~/.bashrc). Mounts vanish at reboot: apply re-makes them.
 * runs: mountpoint -q <mnt>; install -d …; setfacl -m u:<uid>:--x <dir>; mount --bind <objects> <mnt>; mount -o remount,bind,ro <mnt>;
 *       mountpoint -q <mnt>/info/alternates; (as the host user) sh -c <ENSURE_LIST> sh <objects>; tee <dir>/alternates.masked;
 *       mount --bind <mask> <mnt>/info/alternates; mount -o remount,bind,ro <mnt>/info/alternates
 */
async function ensureObjectsMount(sys: GuestSystem, pw: Passwd, host: HostUser, id: string, objects: string): Promise<boolean> {
  const { exec } = sys;
  const mnt = sys.layout.objectsMount(id);
  const dir = dirname(mnt);
  let changed = false;
  if ((await exec.run(["mountpoint", "-q", mnt], { check: false })).exitCode !== 0) {
    await exec.run(["install", "-d", "-m", "0711", "-o", "root", "-g", "root", dirname(dir)]);
    await exec.run(["install", "-d", "-m", "0700", "-o", "root", "-g", "root", dir, mnt]);
    await exec.run(["setfacl", "-m", `u:${pw.uid}:--x`, dir]);
    await exec.run(["mount", "--bind", objects, mnt]);
    await exec.run(["mount", "-o", "remount,bind,ro", mnt]);
    changed = true;
  }
  // Over the host objects' own list of alternates (the stores of every sandbox of the repo), an empty root-owned
  // file: this guest never reaches another sandbox's commits. The list must exist to be masked; it is made (empty,
  // which changes nothing) by the host user, never by root in their repo.
  const list = join(mnt, "info", "alternates");
  if ((await exec.run(["mountpoint", "-q", list], { check: false })).exitCode !== 0) {
    await exec.run(asHost(host, ["sh", "-c", ENSURE_LIST, "sh", objects]));
    const mask = join(dir, "alternates.masked");
    await exec.run(["tee", mask], { stdin: "" });
    await exec.run(["mount", "--bind", mask, list]);
    await exec.run(["mount", "-o", "remount,bind,ro", list]);
    changed = true;
  }
  return changed;
}
