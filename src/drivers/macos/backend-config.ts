// What a macOS backend is made of, apart from its verbs (backend.ts): its configuration, the options a spec carries for
// it, the account context each verb works in, and the pure names it derives (a mirror's key, a kernel path).
import { basename } from "node:path";
import { z } from "zod";
import type { SandboxSpec } from "../../core/spec";
import type { Exec } from "../../sys/exec";
import { sha256Hex } from "../../sys/paths";
import type { SpawnLines } from "./pflog-audit";
import type { IdRange } from "./naming";
import type { RootRunner } from "./privileged";

/** What the guest gets on the host's read-only mirror (alternates) — read, never write. */
export const MIRROR_PERMS = ["list", "search", "readattr", "readextattr", "readsecurity", "file_inherit", "directory_inherit"];

export interface MacosBackendConfig {
  /** Runs commands as the host user (the daemon's user). */
  exec: Exec;
  /** Runs the validated root requests (sudoRoot in production). */
  root: RootRunner;
  /** The host user every sandbox of this backend belongs to (list and cleanup need it without a spec). */
  hostUser: string;
  /** The daemon's runtime dir (holds `sb/<id>/` socket dirs). */
  runtimeDir: string;
  /** A Bun binary and the installed shim dir, both readable (not writable) by guests. */
  runtime: string;
  shimDir: string;
  uidRange?: IdRange;
  usersDir?: string;
  shareRoot?: string;
  /** The root helper's state dir (its `held/` UIDs are readable by everyone); /private/var/db/sbx by default. */
  stateDir?: string;
  /** Checked before apply changes anything (the installed kit, on a real Mac); throws with what to do. */
  preflight?: () => void;
  /** How the pflog audit starts its long-lived tcpdump (tests; default: under sbx's PTY through `exec`). */
  spawnLines?: SpawnLines;
  /** How often the pf watchdog looks (tests; default PF_WATCH_MS). */
  pfWatchMs?: number;
}

export const OptionsSchema = z.object({
  driver: z.literal("user", { error: "a macOS sandbox's spec must carry user-account options" }),
  proxyPort: z.number({ error: "spec.options.proxyPort is required on macOS (the guest's loopback proxy port)" }).int().min(1024).max(65535),
});

export interface Ctx {
  spec: SandboxSpec;
  guest: string;
  home: string;
  port: number;
  mirror: string;
  share: string;
  workspace: string;
}

export function key(repo: string): string {
  return `${basename(repo)}-${sha256Hex(repo).slice(0, 12)}`;
}

/** A path as macOS's kernel names it (what Seatbelt matches): /tmp, /var and /etc are links into /private. Pure. */
export function realPath(p: string): string {
  return /^\/(tmp|var|etc)(\/|$)/.test(p) ? `/private${p}` : p;
}
