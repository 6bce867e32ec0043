// The macOS root kit that `sbx service install` puts in place: the root helper, the guests' Bun and shims, the sudoers rule and the reapply LaunchDaemon, all root-owned.
//
// Why root-owned copies: sudoers lets the host user run the helper as root without a password, so the helper and the
// Bun that runs it must not be writable by that user (or by anything running as the user); and guests cannot read the
// host's home, where Bun and sbx usually live. Everything is rendered first (pure), then applied through Exec with
// sudo; the user is shown the sudoers rule before it is written.
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SbxError } from "../../core/errors";
import { BUN_NO_CWD_CONFIG } from "../../sys/bun-args";
import { ExecError, type Exec } from "../../sys/exec";
import { AGENT_SETUP_SCRIPT, SHIM_FILES } from "../provision/provision";
import { BIN } from "./bin";
import { hostTag } from "./naming";
import { renderPrivilegedPlist, renderSudoers } from "./render";

/** Where the kit goes (shared by every user of this Mac; the sudoers rule is per user). */
export const KIT_LIB = "/usr/local/libexec/sbx";
export const KIT_LABEL = "dev.sbx.privileged";
const KIT_LOG = "/private/var/log/sbx-privileged.log";
const SUDOERS_DIR = "/etc/sudoers.d";
const LAUNCH_DAEMONS = "/Library/LaunchDaemons";

export interface KitPaths {
  lib: string;
  /** The Bun that runs the helper as root and the guests' shims. */
  bun: string;
  /** The helper, bundled into one file (no node_modules, no sbx source tree at run time). */
  helper: string;
  shims: string;
  /** This host user's rule. */
  sudoers: string;
  plist: string;
}

export function kitPaths(hostUser: string, lib: string = KIT_LIB): KitPaths {
  return {
    lib,
    bun: `${lib}/bun`,
    helper: `${lib}/privileged.js`,
    shims: `${lib}/shims`,
    sudoers: `${SUDOERS_DIR}/sbx_${hostTag(hostUser)}`,
    plist: `${LAUNCH_DAEMONS}/${KIT_LABEL}.plist`,
  };
}

/**
 * The argv prefix sudo runs as root: what the sudoers rule names and the daemon calls. Bun must not read the caller's
 * directory's bunfig.toml (a preload would run as root) or .env (sys/bun-args.ts).
 */
export function kitHelperArgv(k: KitPaths): string[] {
  return [k.bun, ...BUN_NO_CWD_CONFIG, k.helper];
}

/** The shim scripts the kit holds: the guests' git/gh/sbx-egress, and what `sbx run AGENT` runs first. */
function kitShims(): string[] {
  return [...SHIM_FILES.map((s) => s.script), AGENT_SETUP_SCRIPT];
}

/** Pure: the two files the kit writes outside its lib dir. */
export function renderKit(hostUser: string, k: KitPaths): { sudoers: string; plist: string } {
  const helperArgv = kitHelperArgv(k);
  return {
    sudoers: renderSudoers({ hostUser, helperArgv }),
    plist: renderPrivilegedPlist({ label: KIT_LABEL, helperArgv, log: KIT_LOG }),
  };
}

/** What the kit is made from on this machine: the running Bun, the helper's source, the shims' dir. */
export interface KitSource {
  bun: string;
  helperSource: string;
  shimDir: string;
}

export function kitSource(runtime: { bun: string; shims: string }): KitSource {
  return { bun: runtime.bun, helperSource: join(import.meta.dir, "privileged.ts"), shimDir: runtime.shims };
}

/** The kit's files that are missing (empty when it is installed). */
export function kitMissing(k: KitPaths, exists: (p: string) => boolean = existsSync): string[] {
  return [k.bun, k.helper, ...kitShims().map((s) => `${k.shims}/${s}`), k.sudoers].filter((p) => !exists(p));
}

/** Thrown before anything asks sudo for a helper that is not there: says what to run. */
export function requireKit(k: KitPaths, exists: (p: string) => boolean = existsSync): void {
  const missing = kitMissing(k, exists);
  if (missing.length === 0) return;
  throw new SbxError("not_available", `the macOS backend's root kit is not installed (missing: ${missing.join(", ")})`, {
    hint: "Run `sbx service install` once (it shows the sudoers rule, then asks sudo for your password to install the root helper).",
  });
}

const root = (argv: string[]) => [BIN.sudo, ...argv];
const installArgv = (mode: string, from: string[], to: string) => root([BIN.install, "-o", "root", "-g", "wheel", "-m", mode, ...from, to]);

/** sudo asked for a password it could not read (no terminal): the step and what to do instead. */
async function asRoot(exec: Exec, argv: string[], what: string, check = true): Promise<void> {
  const r = await exec.run(argv, { check: false });
  if (r.exitCode === 0 || !check) return;
  if (/a terminal is required|no tty present|a password is required/i.test(r.stderr)) {
    throw new SbxError("permission", `installing sbx's root kit needs sudo, which could not ask for your password (${what})`, {
      hint: "Run `sbx service install` from a terminal, or run `sudo -v` first.",
    });
  }
  throw new ExecError(r, `That step was ${what}; nothing after it was done. Fix what it says, then run \`sbx service install\` again.`);
}

/**
 * Installs (or refreshes: every step converges) the kit for `hostUser`. The sudoers rule is shown (`showRule`) before
 * anything runs and checked with visudo before it is written; a rule visudo refuses is never installed.
 * runs: bun --no-env-file --config=/dev/null build <helper source> --target=bun --outfile=<tmp>/privileged.js;
 *       sudo visudo -cf <tmp>/sudoers; sudo install -d …; sudo install … (bun, helper, shims, sudoers, plist);
 *       sudo launchctl bootout system/dev.sbx.privileged; sudo launchctl bootstrap system <plist>
 */
export async function installKit(
  exec: Exec,
  o: { hostUser: string; source: KitSource; paths?: KitPaths; tmp?: string; showRule?: (path: string, rule: string) => void },
): Promise<{ paths: KitPaths; sudoers: string }> {
  const k = o.paths ?? kitPaths(o.hostUser);
  const files = renderKit(o.hostUser, k);
  o.showRule?.(k.sudoers, files.sudoers); // before anything runs: the user sees what sudo will be asked to allow
  const tmp = o.tmp ?? mkdtempSync(join(tmpdir(), "sbx-kit-"));
  try {
    const built = join(tmp, "privileged.js");
    // Built from /, reading no bunfig.toml or .env of the caller's directory: what runs as root is sbx's own code.
    await exec.run([o.source.bun, ...BUN_NO_CWD_CONFIG, "build", o.source.helperSource, "--target=bun", `--outfile=${built}`], { cwd: "/" });
    writeFileSync(join(tmp, "sudoers"), files.sudoers, { mode: 0o600 });
    writeFileSync(join(tmp, "plist"), files.plist, { mode: 0o644 });
    await asRoot(exec, root([BIN.visudo, "-cf", join(tmp, "sudoers")]), "checking the sudoers rule with visudo");
    await asRoot(exec, root([BIN.install, "-d", "-o", "root", "-g", "wheel", "-m", "0755", k.lib, k.shims]), `making ${k.lib}`);
    await asRoot(exec, installArgv("0755", [o.source.bun], k.bun), "installing Bun");
    await asRoot(exec, installArgv("0644", [built], k.helper), "installing the root helper");
    await asRoot(exec, installArgv("0644", kitShims().map((s) => join(o.source.shimDir, s)), `${k.shims}/`), "installing the shims");
    await asRoot(exec, installArgv("0440", [join(tmp, "sudoers")], k.sudoers), `installing ${k.sudoers}`);
    await asRoot(exec, installArgv("0644", [join(tmp, "plist")], k.plist), `installing ${k.plist}`);
    // bootstrap refuses a loaded job: unload first, so a changed plist takes effect and installing twice converges.
    await asRoot(exec, root([BIN.launchctl, "bootout", `system/${KIT_LABEL}`]), "unloading the old LaunchDaemon", false);
    await asRoot(exec, root([BIN.launchctl, "bootstrap", "system", k.plist]), "loading the LaunchDaemon");
    return { paths: k, sudoers: files.sudoers };
  } finally {
    if (o.tmp === undefined) rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Removes this user's sudoers rule; the shared lib dir and the LaunchDaemon go only when no other user's sbx rule is
 * left. Removing what is not installed succeeds.
 * runs: sudo rm -f /etc/sudoers.d/sbx_<host>; [sudo launchctl bootout system/dev.sbx.privileged; sudo rm -f <plist>;
 *       sudo rm -rf /usr/local/libexec/sbx]
 */
export async function uninstallKit(exec: Exec, o: { hostUser: string; paths?: KitPaths; otherRules?: () => string[] }): Promise<{ removed: string[] }> {
  const k = o.paths ?? kitPaths(o.hostUser);
  const removed: string[] = [];
  if (existsSync(k.sudoers)) removed.push(k.sudoers);
  await asRoot(exec, root([BIN.rm, "-f", k.sudoers]), `removing ${k.sudoers}`);
  const others = (o.otherRules ?? (() => otherSbxRules(k)))();
  if (others.length > 0) return { removed };
  await asRoot(exec, root([BIN.launchctl, "bootout", `system/${KIT_LABEL}`]), "unloading the LaunchDaemon", false);
  for (const p of [k.plist, k.lib]) if (existsSync(p)) removed.push(p);
  await asRoot(exec, root([BIN.rm, "-f", k.plist]), `removing ${k.plist}`);
  await asRoot(exec, root([BIN.rm, "-rf", k.lib]), `removing ${k.lib}`);
  return { removed };
}

/** Other users' sbx sudoers rules (the directory is world-listable on macOS). */
function otherSbxRules(k: KitPaths): string[] {
  const mine = k.sudoers.split("/").pop();
  try {
    return readdirSync(SUDOERS_DIR).filter((f) => f.startsWith("sbx_") && f !== mine);
  } catch {
    return [];
  }
}
