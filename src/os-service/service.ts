// Installs, removes and inspects the controller service: renders the unit/plist, writes it, and applies it through Exec.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { SbxError } from "../core/errors";
import { PROXY_VARIABLES, parseParentUrl } from "../core/parent-proxy";
import type { Env } from "../sys/env";
import { selfUser } from "../sys/host-user";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import type { KitPaths, KitSource } from "../drivers/macos/install";
import {
  LAUNCHD_LABEL,
  SYSTEMD_UNIT_NAME,
  renderLaunchAgentPlist,
  renderSystemdSystemUnit,
  renderSystemdUserUnit,
  type ServiceSpec,
} from "./render";

export type ServiceKind = "systemd-user" | "systemd-system" | "launchd";

export interface ServiceDeps {
  /** This process's environment: on a Mac sbx never runs as root (cli/as-person.ts), so its user is the person. */
  env: Env;
  paths: Paths;
  exec: Exec;
  /** The daemon's argv (defaults to how this sbx runs). */
  daemonArgv: string[];
  /** Whether systemd runs this machine (`/run/systemd/system` exists); a seam for tests. */
  systemdRunning?: () => boolean;
  /**
   * macOS: the root kit (helper, guests' Bun and shims, sudoers rule, reapply LaunchDaemon) installed with the agent.
   * Defaults to the running Bun and this sbx's files; a seam for tests.
   */
  kit?: { source?: KitSource; paths?: KitPaths; otherRules?: () => string[]; tmp?: string };
  /** macOS: told the sudoers rule before it is written (the user sees what sudo will allow). */
  showSudoers?: (path: string, rule: string) => void;
}

export interface ServiceStatus {
  kind: ServiceKind;
  file: string;
  installed: boolean;
  /** As systemctl / launchctl report it. */
  active: boolean;
  enabled: boolean;
  detail: string;
}

export function serviceKind(env: Env, system: boolean): ServiceKind {
  if (env.platform === "darwin") {
    if (system) {
      throw new SbxError("usage", "--system is for the Linux-user backend on Linux", {
        hint: "On macOS run `sbx service install` as yourself: a LaunchAgent runs at your login.",
      });
    }
    return "launchd";
  }
  if (env.platform !== "linux") {
    throw new SbxError("not_available", `sbx service does not support ${env.platform}`, { hint: "Run `sbx daemon` yourself." });
  }
  if (system && env.uid !== 0) {
    throw new SbxError("permission", "installing the system unit needs root", { hint: "Run `sudo sbx service install --system`." });
  }
  return system ? "systemd-system" : "systemd-user";
}

/** Where the unit or plist goes. */
export function serviceFile(kind: ServiceKind, env: Env): string {
  const home = env.vars.HOME;
  switch (kind) {
    case "launchd":
      return join(home, "Library", "LaunchAgents", `${LAUNCHD_LABEL}.plist`);
    case "systemd-user":
      return join(env.vars.XDG_CONFIG_HOME ?? join(home, ".config"), "systemd", "user", SYSTEMD_UNIT_NAME);
    case "systemd-system":
      return join("/etc/systemd/system", SYSTEMD_UNIT_NAME);
  }
}

/**
 * Pure: the spec for the renderers; only PATH, DOCKER_HOST and the proxy variables (the host's parent proxy, which the
 * daemon goes out through) cross from the environment; a proxy URL that holds credentials does not (a unit file is no
 * place for a secret: the config file's `proxy.credentials` names a stored one, and `sbx doctor` says so).
 */
export function serviceSpec(deps: Pick<ServiceDeps, "env" | "paths" | "daemonArgv">): ServiceSpec {
  const env: Record<string, string> = { PATH: deps.env.vars.PATH };
  if (deps.env.vars.DOCKER_HOST) env.DOCKER_HOST = deps.env.vars.DOCKER_HOST;
  for (const k of PROXY_VARIABLES) {
    const v = deps.env.raw[k];
    if (v && (/no_proxy/i.test(k) || !hasCredentials(v))) env[k] = v;
  }
  return { argv: deps.daemonArgv, env, logPath: deps.paths.daemonLog, home: deps.env.vars.HOME };
}

/** Pure: the file content for a kind. */
export function renderService(kind: ServiceKind, spec: ServiceSpec): string {
  switch (kind) {
    case "launchd":
      return renderLaunchAgentPlist(spec);
    case "systemd-user":
      return renderSystemdUserUnit(spec);
    case "systemd-system":
      return renderSystemdSystemUnit(spec);
  }
}

function systemctl(kind: ServiceKind): string[] {
  return kind === "systemd-user" ? ["systemctl", "--user"] : ["systemctl"];
}

function requireSystemd(deps: ServiceDeps): void {
  const running = deps.systemdRunning ?? (() => existsSync("/run/systemd/system"));
  if (!running()) {
    throw new SbxError("unavailable", "systemd is not running on this machine (no /run/systemd/system)", {
      hint: "Start the controller yourself with `sbx daemon` (the CLI also starts it on demand).",
    });
  }
}

function writeAtomic(file: string, content: string): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
  const tmp = `${file}.sbx-tmp`;
  writeFileSync(tmp, content, { mode: 0o644 });
  renameSync(tmp, file);
}

/**
 * Writes the unit or plist and starts it.
 * runs: systemctl [--user] daemon-reload; systemctl [--user] enable --now sbx.service
 * runs: launchctl bootout gui/<uid>/dev.sbx.daemon (if loaded); launchctl bootstrap gui/<uid> <plist>, after the
 *       macOS root kit (installMacosKit: the sudoers rule is shown first, then written with sudo)
 */
export async function installService(deps: ServiceDeps, kind: ServiceKind): Promise<{ file: string; changed: boolean; kit?: KitPaths }> {
  const file = serviceFile(kind, deps.env);
  const content = renderService(kind, serviceSpec(deps));
  const changed = !existsSync(file) || readFileSync(file, "utf8") !== content;
  if (kind === "launchd") {
    // The kit first: the daemon the agent starts needs the helper (pf anchors back at its start).
    const kit = await installMacosKit(deps);
    mkdirSync(dirname(deps.paths.daemonLog), { recursive: true, mode: 0o700 });
    writeAtomic(file, content);
    const target = `gui/${deps.env.uid}`;
    // bootstrap fails on a loaded job: unload first so a changed plist takes effect (and installing twice converges).
    await deps.exec.run(["launchctl", "bootout", `${target}/${LAUNCHD_LABEL}`], { check: false });
    await deps.exec.run(["launchctl", "bootstrap", target, file]);
    return { file, changed, kit };
  }
  requireSystemd(deps);
  writeAtomic(file, content);
  await deps.exec.run([...systemctl(kind), "daemon-reload"]);
  await deps.exec.run([...systemctl(kind), "enable", "--now", SYSTEMD_UNIT_NAME]);
  if (changed) await deps.exec.run([...systemctl(kind), "restart", SYSTEMD_UNIT_NAME]);
  return { file, changed };
}

/** The kit's sudoers rule for this user, as `sbx service install` would write it (for --print). */
export async function macosSudoersRule(deps: Pick<ServiceDeps, "env" | "kit">): Promise<{ path: string; rule: string; daemonPlist: string }> {
  const { kitPaths, renderKit } = await import("../drivers/macos/install");
  const k = deps.kit?.paths ?? kitPaths(selfUser(deps.env).name);
  const r = renderKit(selfUser(deps.env).name, k);
  return { path: k.sudoers, rule: r.sudoers, daemonPlist: r.plist };
}

/** runs: (installKit) bun build …; sudo visudo -cf …; sudo install …; sudo launchctl bootstrap system … */
async function installMacosKit(deps: ServiceDeps): Promise<KitPaths> {
  const [{ installKit, kitSource }, { defaultRuntime }] = await Promise.all([import("../drivers/macos/install"), import("../drivers/docker/docker")]);
  const r = await installKit(deps.exec, {
    hostUser: selfUser(deps.env).name,
    source: deps.kit?.source ?? kitSource(defaultRuntime()),
    ...(deps.kit?.paths ? { paths: deps.kit.paths } : {}),
    ...(deps.kit?.tmp ? { tmp: deps.kit.tmp } : {}),
    ...(deps.showSudoers ? { showRule: deps.showSudoers } : {}),
  });
  return r.paths;
}

/**
 * Stops the service and removes its file; removing what is not installed succeeds. On macOS the user's sudoers rule
 * goes too (and the shared kit, when no other user's rule is left): the caller refuses while macOS sandboxes remain.
 * runs: systemctl [--user] disable --now sbx.service; systemctl [--user] daemon-reload
 * runs: launchctl bootout gui/<uid>/dev.sbx.daemon; (uninstallKit) sudo rm -f /etc/sudoers.d/sbx_<host> …
 */
export async function uninstallService(deps: ServiceDeps, kind: ServiceKind): Promise<{ file: string; changed: boolean }> {
  const file = serviceFile(kind, deps.env);
  const had = existsSync(file);
  if (kind === "launchd") {
    await deps.exec.run(["launchctl", "bootout", `gui/${deps.env.uid}/${LAUNCHD_LABEL}`], { check: false });
    rmSync(file, { force: true });
    const { uninstallKit } = await import("../drivers/macos/install");
    const kit = await uninstallKit(deps.exec, {
      hostUser: selfUser(deps.env).name,
      ...(deps.kit?.paths ? { paths: deps.kit.paths } : {}),
      ...(deps.kit?.otherRules ? { otherRules: deps.kit.otherRules } : {}),
    });
    return { file, changed: had || kit.removed.length > 0 };
  }
  // Without systemd there is no unit running to stop: a file left behind goes, and none is nothing to remove.
  const running = deps.systemdRunning ?? (() => existsSync("/run/systemd/system"));
  if (!running()) {
    rmSync(file, { force: true });
    return { file, changed: had };
  }
  await deps.exec.run([...systemctl(kind), "disable", "--now", SYSTEMD_UNIT_NAME], { check: false });
  rmSync(file, { force: true });
  await deps.exec.run([...systemctl(kind), "daemon-reload"]);
  return { file, changed: had };
}

/**
 * runs: systemctl [--user] is-active sbx.service; systemctl [--user] is-enabled sbx.service
 * runs: launchctl print gui/<uid>/dev.sbx.daemon
 */
export async function serviceStatus(deps: ServiceDeps, kind: ServiceKind): Promise<ServiceStatus> {
  const file = serviceFile(kind, deps.env);
  const installed = existsSync(file);
  if (kind === "launchd") {
    const r = await deps.exec.run(["launchctl", "print", `gui/${deps.env.uid}/${LAUNCHD_LABEL}`], { check: false });
    const state = /^\s*state = (\S+)/m.exec(r.stdout)?.[1] ?? (r.exitCode === 0 ? "loaded" : "not loaded");
    const { kitMissing, kitPaths } = await import("../drivers/macos/install");
    const missing = kitMissing(deps.kit?.paths ?? kitPaths(selfUser(deps.env).name));
    const kit = missing.length === 0 ? "root kit installed" : `root kit missing ${missing.join(", ")}`;
    return { kind, file, installed: installed && missing.length === 0, active: state === "running", enabled: r.exitCode === 0, detail: `${state}; ${kit}` };
  }
  const running = deps.systemdRunning ?? (() => existsSync("/run/systemd/system"));
  if (!running()) return { kind, file, installed, active: false, enabled: false, detail: "systemd is not running on this machine" };
  const active = await deps.exec.run([...systemctl(kind), "is-active", SYSTEMD_UNIT_NAME], { check: false });
  const enabled = await deps.exec.run([...systemctl(kind), "is-enabled", SYSTEMD_UNIT_NAME], { check: false });
  return {
    kind,
    file,
    installed,
    active: active.exitCode === 0,
    enabled: enabled.exitCode === 0,
    detail: `${active.stdout.trim() || "unknown"}, ${enabled.stdout.trim() || "not enabled"}`,
  };
}

/** Pure: whether a proxy URL carries a user or password (or cannot be read, and so might). */
function hasCredentials(url: string): boolean {
  const p = parseParentUrl(url);
  return !p.ok ? /@/.test(url) : p.endpoint.credentials !== null;
}
