// A guest's account as sbx reads it and runs as it: its passwd entry, the record sbx keeps of it (so removal can undo
// ACLs on host paths even after a crash), and the argv that drops to it with nothing of root's.
import { z } from "zod";
import type { GuestSystem } from "./layout";

export interface Passwd {
  name: string;
  uid: number;
  gid: number;
  gecos: string;
  home: string;
  shell: string;
}

/** What sbx recorded about a guest so that removal can undo ACLs on host paths even after a crash. */
export const GuestMetaSchema = z.object({
  id: z.string(),
  name: z.string(),
  repo: z.string(),
  user: z.string(),
  uid: z.number().int(),
  /** Host dirs given `u:<guest>:--x`; empty since objects are reached through a bind mount (kept for older records). */
  traverse: z.array(z.string()),
  /** The host repo's objects dir given `u:<guest>:rX` recursively (and as default ACL). */
  objects: z.string().nullable(),
  /** The guest's gid (its own group): what it owns is swept by uid and gid even when the account is gone. */
  gid: z.number().int().optional(),
  /** The sandbox's host-side dir: tells a daemon of another sbx state root that this guest is not its to clean up. */
  dir: z.string().optional(),
});
export type GuestMeta = z.infer<typeof GuestMetaSchema>;

export function parsePasswdLine(line: string): Passwd | null {
  const f = line.split(":");
  if (f.length < 7) return null;
  const uid = Number(f[2]);
  const gid = Number(f[3]);
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) return null;
  return { name: f[0]!, uid, gid, gecos: f[4]!, home: f[5]!, shell: f[6]! };
}

/** What a guest process may never gain: privileges through exec (setuid, file capabilities), or any capability. */
export const GUEST_PRIVS = ["--no-new-privs", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"] as const;

/**
 * argv that runs as the guest with nothing of root's: its uid, gid and groups, a reset environment, no way to gain a
 * privilege (no_new_privs: a setuid binary runs as the guest) and every capability set empty, the bounding set too.
 */
export function asGuestArgv(guest: string, argv: string[]): string[] {
  return ["setpriv", `--reuid=${guest}`, `--regid=${guest}`, "--init-groups", ...GUEST_PRIVS, "--reset-env", "--", ...argv];
}

/** runs: getent passwd <name> */
export async function getUser(sys: GuestSystem, name: string): Promise<Passwd | null> {
  const r = await sys.exec.run(["getent", "passwd", name], { check: false });
  if (r.exitCode !== 0) return null;
  return parsePasswdLine(r.stdout.trim());
}

/** runs: cat <root>/meta/<id>.json */
export async function readMeta(sys: GuestSystem, id: string): Promise<GuestMeta | null> {
  const r = await sys.exec.run(["cat", sys.layout.metaFile(id)], { check: false });
  if (r.exitCode !== 0) return null;
  try {
    return GuestMetaSchema.parse(JSON.parse(r.stdout));
  } catch {
    return null;
  }
}
