// sbx doctor on a Mac: repos under ~/Desktop, ~/Documents or ~/Downloads, which macOS privacy protection (TCC) keeps
// from the sbx daemon (a launchd agent) until it has Full Disk Access.
import { readdirSync } from "node:fs";
import { LAUNCHD_LABEL } from "../os-service/render";
import type { Check } from "./check";

/** The folders of a home that TCC guards (System Settings → Privacy & Security → Files and Folders). */
export const TCC_FOLDERS = ["Desktop", "Documents", "Downloads"] as const;

/** A path doctor asks about: a macOS sandbox's repo, or the repo the person is in. */
export interface RepoPlace {
  path: string;
  /** What it is, for the message: `sandbox demo`, `this repo`. */
  what: string;
}

/** Reads `path` as the daemon would start to (lists it); throws the system's error (EPERM when TCC refuses). */
export type ReadProbe = (path: string) => void;

export interface TccInput {
  /** The person's home (host-user.ts). */
  home: string;
  repos: readonly RepoPlace[];
  /** The program the daemon runs (its Bun): what Full Disk Access must be given to. */
  daemonProgram: string;
  /** The terminal app this doctor runs in (TERM_PROGRAM), if it says. */
  terminal?: string | undefined;
  /** Default: list the directory. */
  probe?: ReadProbe;
}

/** Pure: which TCC-guarded folder of `home` holds `path` (APFS compares names without case); null when none does. */
export function tccFolder(home: string, path: string): (typeof TCC_FOLDERS)[number] | null {
  const h = home.replace(/\/+$/, "").toLowerCase();
  const p = path.toLowerCase();
  return TCC_FOLDERS.find((f) => p === `${h}/${f.toLowerCase()}` || p.startsWith(`${h}/${f.toLowerCase()}/`)) ?? null;
}

/** How the probe ended: read, refused by TCC (EPERM "Operation not permitted"), gone, or something else (not a dir). */
function probeOf(probe: ReadProbe, path: string): "read" | "tcc" | "gone" | "other" {
  try {
    probe(path);
    return "read";
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === "EPERM" ? "tcc" : code === "ENOENT" ? "gone" : "other";
  }
}

/**
 * The Full Disk Access check: ok when no repo is in a guarded folder; else a warning naming them and how to grant it,
 * worse worded when this very terminal is refused (the probe's EPERM). The probe runs in the CLI, whose TCC grants are
 * its terminal's, not the daemon's: a repo this terminal reads may still be closed to the daemon, hence a warning
 * either way. runs: nothing (reads each guarded repo's directory listing)
 */
export function checkFullDiskAccess(i: TccInput): Check {
  const probe = i.probe ?? ((p: string) => void readdirSync(p));
  const short = (p: string) => (p.startsWith(`${i.home}/`) ? `~/${p.slice(i.home.length + 1)}` : p);
  const guarded = i.repos.flatMap((r) => {
    const folder = tccFolder(i.home, r.path);
    if (folder === null) return [];
    const read = probeOf(probe, r.path);
    return read === "gone" ? [] : [{ ...r, folder, read }];
  });
  const seen = new Set<string>();
  const unique = guarded.filter((r) => !seen.has(r.path) && seen.add(r.path));
  if (unique.length === 0) {
    return { name: "disk access", status: "ok", detail: "no repo of a macOS sandbox, nor this one, is under ~/Desktop, ~/Documents or ~/Downloads" };
  }
  const list = (rs: typeof unique) => rs.slice(0, 3).map((r) => `${short(r.path)} (${r.what})`).join(", ") + (rs.length > 3 ? ` and ${rs.length - 3} more` : "");
  const folders = [...new Set(unique.map((r) => `~/${r.folder}`))].join(", ");
  const blocked = unique.filter((r) => r.read === "tcc");
  const detail =
    blocked.length > 0
      ? `reading ${list(blocked)} failed: Operation not permitted (EPERM): macOS privacy protection (TCC) keeps ${folders} from this terminal, and from the sbx daemon unless it has Full Disk Access`
      : `${list(unique)} ${unique.length === 1 ? "is" : "are"} under ${folders}, which macOS privacy protection (TCC) keeps from programs not allowed in: the sbx daemon (a launchd agent) cannot read ${unique.length === 1 ? "it" : "them"} without Full Disk Access`;
  const who = [`${i.daemonProgram} (the Bun the daemon runs; ⌘⇧G types a path)`, ...(blocked.length > 0 ? [`your terminal app${i.terminal ? ` (${i.terminal})` : ""}`] : [])];
  return {
    name: "disk access",
    status: "warn",
    detail,
    fix: `System Settings → Privacy & Security → Full Disk Access: add (+) and turn on ${who.join(" and ")}, then restart the daemon (launchctl kickstart -k gui/$(id -u)/${LAUNCHD_LABEL}); or keep the repo outside ~/Desktop, ~/Documents and ~/Downloads`,
  };
}
