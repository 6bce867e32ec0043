// Everything of this backend's on the system, by sandbox id (accounts, homes, nft chains, records, staging dirs,
// objects mounts), and how one sandbox's leftovers are removed, in the order that leaves its uid nothing.
import { join } from "node:path";
import { getUser, parsePasswdLine, readMeta, type GuestMeta, type Passwd } from "./accounts";
import type { GuestCgroups } from "./cgroup";
import { ensureFirewall, readTable } from "./firewall";
import type { GuestSystem } from "./layout";
import { chainName, parseChainName, parseGuestUser } from "./naming";
import { renderRemove, type TableState } from "./nft";
import { killGuest, sweep } from "./uids";

/** One sandbox id's leftovers, whichever of them exist. */
export interface Inventory {
  id: string;
  user?: Passwd;
  home?: string;
  chain?: TableState["chains"] extends Map<string, infer C> ? C : never;
  metaFile?: string;
  meta?: GuestMeta | null;
  stage?: string;
  /** `<root>/objects/<id>`, holding the read-only bind mount of the host's objects. */
  objectsDir?: string;
}

/**
 * Everything of this backend's on the system, by sandbox id: accounts whose name parses and whose home is
 * under `<root>/homes`, home dirs, nft chains, meta files and staging dirs.
 * runs: getent passwd; nft -j list table …; find <homes> <meta> <stage> -mindepth 1 -maxdepth 1 -printf '%h %f\n'
 */
export async function inventory(sys: GuestSystem): Promise<Map<string, Inventory>> {
  const { layout } = sys;
  const out = new Map<string, Inventory>();
  const at = (id: string) => {
    let i = out.get(id);
    if (!i) out.set(id, (i = { id }));
    return i;
  };
  const pw = await sys.exec.run(["getent", "passwd"], { check: false });
  for (const line of pw.stdout.split("\n")) {
    const p = parsePasswdLine(line);
    if (!p) continue;
    const id = parseGuestUser(p.name);
    if (id && p.home === layout.home(p.name)) at(id).user = p;
  }
  const t = await readTable(sys);
  for (const c of t.chains.values()) {
    const id = parseChainName(c.chain);
    if (id) at(id).chain = c;
  }
  const objects = join(layout.root, "objects");
  const f = await sys.exec.run(["find", layout.homesDir, layout.metaDir, layout.stageDir, objects, "-mindepth", "1", "-maxdepth", "1", "-printf", "%h %f\n"], { check: false });
  for (const line of f.stdout.split("\n")) {
    const sp = line.indexOf(" ");
    if (sp < 0) continue;
    const dir = line.slice(0, sp);
    const leaf = line.slice(sp + 1);
    if (dir === layout.homesDir) {
      const id = parseGuestUser(leaf);
      if (id) at(id).home = join(dir, leaf);
    } else if (dir === layout.metaDir) {
      const m = /^([a-z0-9]{1,20})\.json$/.exec(leaf);
      if (m) at(m[1]!).metaFile = join(dir, leaf);
    } else if (dir === layout.stageDir && /^[a-z0-9]{1,20}$/.test(leaf)) {
      at(leaf).stage = join(dir, leaf);
    } else if (dir === objects && /^[a-z0-9]{1,20}$/.test(leaf)) {
      at(leaf).objectsDir = join(dir, leaf);
    }
  }
  for (const i of out.values()) if (i.metaFile) i.meta = await readMeta(sys, i.id);
  return out;
}

/**
 * Order matters: block all, kill, take back host-path ACLs, sweep what its uid owns outside its home (holding the uid
 * if anything remains), delete the account, then its files and rules. `runtimeDir` is the daemon's (socket dirs).
 * runs: nft -f -; pkill; setfacl -x; (sweep) …; userdel; groupdel; rm -rf --one-file-system; rm -f
 */
export async function removeInventory(sys: GuestSystem, o: { cgroups: GuestCgroups; runtimeDir: string | undefined }, inv: Inventory): Promise<void> {
  const { exec } = sys;
  const uid = inv.user?.uid ?? inv.meta?.uid ?? inv.chain?.rules?.uid;
  if (inv.user) {
    await ensureFirewall(sys, { id: inv.id, uid: inv.user.uid, mode: "stop" });
    await o.cgroups.killAll(inv.id, undefined).catch(() => false);
    await killGuest(sys, inv.user.uid);
  }
  if (uid !== undefined && o.runtimeDir) {
    // runs: setfacl -x u:<uid> <runtime dir> <runtime dir>/sb (the guest's traverse entries; its own socket dir goes with the daemon)
    await exec.run(["setfacl", "-x", `u:${uid}`, o.runtimeDir, join(o.runtimeDir, "sb")], { check: false });
  }
  if (inv.meta && uid !== undefined) {
    if (inv.meta.traverse.length > 0) await exec.run(["setfacl", "-x", `u:${uid}`, ...inv.meta.traverse], { check: false });
    if (inv.meta.objects) await exec.run(["setfacl", "-R", "-x", `u:${uid},d:u:${uid}`, inv.meta.objects], { check: false });
  }
  // Its files in the shared temp dirs and its IPC objects, while the account still holds the id (held if any remain).
  // A uid known only from the record (the account already gone) is swept only while no other account has it.
  if (uid !== undefined && uid > 0 && (inv.user || !(await getUser(sys, String(uid))))) await sweep(sys, uid, inv.user?.gid ?? inv.meta?.gid ?? uid);
  if (inv.user) {
    await exec.run(["userdel", inv.user.name]);
    const g = await exec.run(["getent", "group", inv.user.name], { check: false });
    if (g.exitCode === 0) await exec.run(["groupdel", inv.user.name], { check: false });
  }
  if (inv.objectsDir) {
    const mnt = sys.layout.objectsMount(inv.id);
    for (const m of [join(mnt, "info", "alternates"), mnt]) {
      if ((await exec.run(["mountpoint", "-q", m], { check: false })).exitCode === 0) await exec.run(["umount", m]);
    }
    await exec.run(["rm", "-rf", "--one-file-system", inv.objectsDir]);
  }
  for (const d of [inv.home, inv.stage]) if (d) await exec.run(["rm", "-rf", "--one-file-system", d]);
  const t = await readTable(sys);
  const c = t.chains.get(chainName(inv.id));
  if (c) await exec.run(["nft", "-f", "-"], { stdin: renderRemove(inv.id, c.uids, sys.table, { uids: c.inUids, chain: c.inChain }, { uids: c.natUids, chain: c.natChain }) });
  if (inv.metaFile) await exec.run(["rm", "-f", inv.metaFile]);
  await o.cgroups.remove(inv.id);
}

/** What removing these leftovers takes away, one line each (prune's report). */
export function describe(i: Inventory): string[] {
  const out: string[] = [];
  if (i.user) out.push(`user ${i.user.name} (uid ${i.user.uid}) of sandbox ${i.id}`);
  if (i.home) out.push(`home ${i.home} of sandbox ${i.id}`);
  if (i.chain) out.push(`nft chain ${i.chain.chain} of sandbox ${i.id}`);
  if (i.meta?.objects) out.push(`ACLs of uid ${i.meta.uid} on ${i.meta.objects} of sandbox ${i.id}`);
  if (i.metaFile) out.push(`record ${i.metaFile} of sandbox ${i.id}`);
  if (i.stage) out.push(`staging dir ${i.stage} of sandbox ${i.id}`);
  if (i.objectsDir) out.push(`objects mount ${i.objectsDir} of sandbox ${i.id}`);
  return out;
}
