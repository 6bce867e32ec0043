// What the guest has and runs: its home (700, the host's ACL), the rc files and shims written into it as the guest,
// root-owned copies of sbx's Bun and shims, and the way down to its own socket dir.
import { dirname, join } from "node:path";
import type { HostUser, SandboxSpec } from "../../core/spec";
import { AGENT_SETUP_SCRIPT, SHIM_FILES, type HomeFile } from "../provision/provision";
import { asGuestArgv, type Passwd } from "./accounts";
import type { GuestSystem } from "./layout";

/** The shim every guest command starts through (as the guest, on sbx's Bun): seccomp and Landlock, then exec. */
export const CONFINE_SCRIPT = "confine.ts";

/**
 * The guest's home: `<homes>/<guest>`, owned by the guest, mode 700, plus `u:<host>:rwx` and the same as a
 * default ACL so the host can read and change what the agent writes. (`ls` shows `rwx` in the group bits:
 * that is the ACL mask; the owning group's own entry stays `---`.)
 * runs: getfacl -p --numeric <home>; install -d -m 0700 -o <uid> -g <gid> <home>; setfacl -m … <home>
 */
export async function ensureHome(sys: GuestSystem, pw: Passwd, host: HostUser): Promise<boolean> {
  const home = sys.layout.home(pw.name);
  const r = await sys.exec.run(["getfacl", "-p", "--numeric", home], { check: false });
  const acl = r.exitCode === 0 ? r.stdout : null;
  let changed = false;
  if (acl === null || !acl.includes(`# owner: ${pw.uid}\n`) || !acl.includes(`# group: ${pw.gid}\n`)) {
    await sys.exec.run(["install", "-d", "-m", "0700", "-o", String(pw.uid), "-g", String(pw.gid), home]);
    changed = true;
  }
  if (host.uid === 0) return changed; // root needs no ACL to get in
  const wanted = [
    `user:${host.uid}:rwx`,
    "group::---",
    "mask::rwx",
    "other::---",
    `default:user:${host.uid}:rwx`,
    "default:group::---",
    "default:other::---",
  ];
  if (changed || acl === null || wanted.some((w) => !acl.split("\n").includes(w))) {
    const spec = [`u:${host.uid}:rwx`, "g::---", "m::rwx", "o::---", "d:u::rwx", `d:u:${host.uid}:rwx`, "d:g::---", "d:m::rwx", "d:o::---"];
    await sys.exec.run(["setfacl", "-m", spec.join(","), home]);
    changed = true;
  }
  return changed;
}

/** Warns (once per apply) when the host home lets every user in: the guest then needs no ACL to read it. runs: stat -c %a <host home> */
export async function checkHostHome(sys: GuestSystem, host: HostUser): Promise<void> {
  const r = await sys.exec.run(["stat", "-c", "%a", host.home], { check: false });
  if (r.exitCode !== 0) return;
  const mode = r.stdout.trim();
  const other = Number.parseInt(mode.slice(-1), 8);
  if ((other & 5) !== 0) {
    sys.warn(
      `your home ${host.home} is mode ${mode}: every account on this machine, sandbox users included, can ` +
        `${other & 4 ? "list and " : ""}open world-readable files in it. Run \`chmod 700 ${host.home}\` to keep sandboxes out.`,
    );
  }
}

/**
 * Writes the rc files and shims AS THE GUEST (root never writes into a tree the guest owns: a planted symlink would
 * redirect it), only when their rendering changed. runs (as the guest): cat ~/.sbx/provisioned; mkdir -p …; tee <f>; chmod <m> <f>
 */
export async function provision(sys: GuestSystem, pw: Passwd, { files, stamp }: { files: HomeFile[]; stamp: string }): Promise<boolean> {
  const home = sys.layout.home(pw.name);
  const stampFile = join(home, ".sbx", "provisioned");
  const g = (argv: string[]) => asGuestArgv(pw.name, argv);
  const cur = await sys.exec.run(g(["cat", stampFile]), { check: false });
  if (cur.exitCode === 0 && cur.stdout.trim() === stamp) return false;
  const dirs = [...new Set([join(home, ".sbx"), ...files.map((f) => dirname(join(home, f.path)))])].sort();
  await sys.exec.run(g(["mkdir", "-p", ...dirs]));
  for (const f of files) {
    const p = join(home, f.path);
    await sys.exec.run(g(["tee", p]), { stdin: f.content });
    await sys.exec.run(g(["chmod", f.mode.toString(8), p]));
  }
  await sys.exec.run(g(["tee", stampFile]), { stdin: `${stamp}\n` });
  return true;
}

/**
 * Copies Bun and the shims to `<root>/runtime` (0755 root) when they differ from the host's (size and mtime, kept by
 * `install -p`). runs: stat -c '%s %Y' <src> <dst>; install -p -m 0755|0644 -o root -g root <src> <dst>
 */
export async function ensureRuntime(sys: GuestSystem, rt: { bun: string; shims: string }): Promise<boolean> {
  const { runtimeDir, runtimeBun, runtimeShims } = sys.layout;
  const pairs: [string, string, string][] = [[rt.bun, runtimeBun, "0755"]];
  for (const s of SHIM_FILES) {
    pairs.push([join(rt.shims, s.script), join(runtimeShims, s.script), "0644"]);
    pairs.push([join(rt.shims, s.name), join(runtimeShims, s.name), "0755"]);
  }
  // What `sbx run AGENT` runs first inside (its instruction section and first-run settings), on the same Bun.
  pairs.push([join(rt.shims, AGENT_SETUP_SCRIPT), join(runtimeShims, AGENT_SETUP_SCRIPT), "0644"]);
  // What every guest command starts through: its seccomp filter and Landlock scopes.
  pairs.push([join(rt.shims, CONFINE_SCRIPT), join(runtimeShims, CONFINE_SCRIPT), "0644"]);
  let changed = false;
  const d = await sys.exec.run(["stat", "-c", "%a %u", runtimeDir, runtimeShims], { check: false });
  if (d.stdout !== "755 0\n755 0\n") {
    await sys.exec.run(["install", "-d", "-m", "0755", "-o", "root", "-g", "root", runtimeDir, runtimeShims]);
    changed = true;
  }
  for (const [src, dst, mode] of pairs) {
    const r = await sys.exec.run(["stat", "-L", "-c", "%s %Y", src, dst], { check: false });
    const [a, b] = r.stdout.split("\n");
    if (r.exitCode === 0 && a === b) continue;
    await sys.exec.run(["install", "-p", "-m", mode, "-o", "root", "-g", "root", src, dst]);
    changed = true;
  }
  return changed;
}

/**
 * The guest may traverse (`--x`, no listing) each dir down to its socket dir (`chain`) and connect to `bridge.sock`,
 * which it is given; `proxy.sock` stays root's 0600 (the guest reaches the proxy only through its loopback port). The
 * daemon's chmod 700 of a socket dir masks the ACL, so every apply checks the effective entry.
 * runs: getfacl -p --numeric --omit-header <dirs>; setfacl -m u:<uid>:--x <dir>; stat -c %u <bridge.sock>; chown <uid> <bridge.sock>
 */
export async function ensureSockets(sys: GuestSystem, spec: SandboxSpec, pw: Passwd, chain: string[]): Promise<boolean> {
  if (chain.length === 0) return false;
  const have = await sys.exec.run(["getfacl", "-p", "--numeric", "--omit-header", spec.sockets.dir], { check: false });
  if (have.exitCode !== 0) return false; // no socket dir: the daemon has not started this sandbox's guards
  let changed = false;
  for (const d of chain) {
    const r = await sys.exec.run(["getfacl", "-p", "--numeric", "--omit-header", d], { check: false });
    if (r.stdout.split("\n").includes(`user:${pw.uid}:--x`)) continue;
    await sys.exec.run(["setfacl", "-m", `u:${pw.uid}:--x`, d]);
    changed = true;
  }
  const s = await sys.exec.run(["stat", "-c", "%u", spec.sockets.bridge], { check: false });
  if (s.exitCode === 0 && s.stdout.trim() !== String(pw.uid)) {
    await sys.exec.run(["chown", String(pw.uid), spec.sockets.bridge]);
    changed = true;
  }
  return changed;
}
