// sbx doctor: checks the host can run sandboxes and says, for each problem, what to do about it.
import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import { probeEngine } from "../drivers/docker/engine";
import { kitMissing, kitPaths } from "../drivers/macos/install";
import { checkHostGc } from "../sync/gc-check";
import { checkPushWorkflows, checkSandboxRemotes, checkStores, checkTokens } from "./repo-checks";
import type { Exec } from "../sys/exec";
import type { Env } from "../sys/env";
import type { Paths } from "../sys/paths";
import { checkConfinement } from "./confinement";
import { checkCompanyCas } from "./company-cas";
import { hostUserOf, userDirectory } from "../sys/host-user";
import { checkFullDiskAccess, type ReadProbe, type RepoPlace } from "./tcc";

import type { Check } from "./check";
import { checkBuildRelay, checkParentProxy } from "./parent-proxy";
import { DockerEngine } from "../drivers/docker/engine-client";
import { hostParentSettings } from "../sys/parent";

export type { Check, CheckStatus } from "./check";

export interface DoctorDeps {
  exec: Exec;
  env: Env;
  paths: Paths;
  bunVersion: string;
  /** Host repos that have sandboxes: their `git gc` settings, sandbox stores, old sandbox remotes and tokens. */
  repos?: readonly string[];
  /** The sbx secrets file's values (names are reported, never values). */
  secrets?: Readonly<Record<string, string>>;
  /** macOS: the repos of its macOS sandboxes and the one the person is in (Full Disk Access, tcc.ts). */
  macosRepos?: readonly RepoPlace[];
  /** macOS: the program the daemon runs (its Bun; default: this process's). */
  daemonProgram?: string;
  /** macOS: how a repo is read to see whether TCC refuses (tests). */
  probe?: ReadProbe;
  /** What the parent proxy is asked to open (default PARENT_PROBE; tests: a loopback name their fake parent knows). */
  parentProbe?: { host: string; port: number };
  /** The engine's default bridge gateway (default: asked of the engine; tests: an address of their choosing). */
  bridgeGateway?: () => Promise<string | null>;
  /** The config's `trust` (company CAs); absent: the check still looks for CAs the host trusts. */
  trust?: "host" | readonly string[];
}

export const MIN_BUN = "1.4.0";

/** Compares dotted versions numerically; returns <0, 0, >0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.+-]/).map((x) => Number.parseInt(x, 10) || 0);
  const pb = b.split(/[.+-]/).map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function checkBun(version: string): Check {
  if (compareVersions(version, MIN_BUN) >= 0) return { name: "bun", status: "ok", detail: `Bun ${version}` };
  return {
    name: "bun",
    status: "fail",
    detail: `Bun ${version} is older than ${MIN_BUN}`,
    fix: "Upgrade Bun: npm install -g bun",
  };
}

async function checkDocker(exec: Exec): Promise<Check> {
  const p = await probeEngine(exec);
  if (!p.ok) {
    switch (p.reason) {
      case "no-client":
        return {
          name: "docker",
          status: "fail",
          detail: "the docker client is not installed",
          fix: "Install Docker Engine (Debian/Ubuntu: sudo apt-get install docker.io), or use --backend user",
        };
      case "permission":
        return {
          name: "docker",
          status: "fail",
          detail: `the Docker engine refused this user: ${p.detail}`,
          fix: "Add yourself to the docker group (sudo usermod -aG docker $USER) and log in again",
        };
      case "no-engine":
        return {
          name: "docker",
          status: "fail",
          detail: `no Docker engine answers: ${p.detail.split("\n")[0]}`,
          fix: "Start it: sudo systemctl start docker (or run dockerd)",
        };
    }
  }
  const v = p.info.ServerVersion;
  if (!p.class.sameUidWorks) {
    return {
      name: "docker",
      status: "fail",
      detail: `Docker ${v}, ${p.class.kind}: ${p.class.why}`,
      fix: "Use a rootful Docker Engine without userns-remap, or the Linux user backend (--backend user)",
    };
  }
  return { name: "docker", status: "ok", detail: `Docker ${v} (${p.class.kind}, ${p.info.OperatingSystem})` };
}

async function checkGit(exec: Exec): Promise<Check> {
  const r = await exec.run(["git", "--version"], { check: false });
  if (r.exitCode !== 0) {
    return { name: "git", status: "fail", detail: "git is not installed", fix: "Install git (sudo apt-get install git)" };
  }
  const version = r.stdout.trim().replace(/^git version /, "");
  if (compareVersions(version, "2.30.0") < 0) {
    return { name: "git", status: "warn", detail: `git ${version} is old`, fix: "Upgrade git to 2.30 or newer" };
  }
  return { name: "git", status: "ok", detail: `git ${version}` };
}

function checkDir(name: string, dir: string): Check {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    accessSync(dir, constants.W_OK | constants.R_OK | constants.X_OK);
    const mode = statSync(dir).mode & 0o777;
    if (mode & 0o077) {
      return {
        name,
        status: "warn",
        detail: `${dir} is readable by others (mode ${mode.toString(8)})`,
        fix: `chmod 700 ${dir}`,
      };
    }
    return { name, status: "ok", detail: dir };
  } catch (e) {
    return {
      name,
      status: "fail",
      detail: `${dir} is not usable: ${(e as Error).message}`,
      fix: `Make sure ${dir} can be created and written by you, or set the matching XDG_* variable`,
    };
  }
}

/**
 * The host's home must keep user-account sandboxes out. On macOS every local account (each sandbox user too) is in
 * group staff and homes default to 750 staff, so only 700 does; on Linux the guests have their own groups.
 */
export function checkHome(home: string, platform: NodeJS.Platform, stat: (p: string) => { mode: number } = statSync): Check {
  try {
    const mode = stat(home).mode & 0o777;
    if (platform === "darwin" && mode & 0o077) {
      return {
        name: "home",
        status: "warn",
        detail: `${home} has mode ${mode.toString(8)}: every macOS account is in group staff, so a sandbox user could read it (macOS sandboxes refuse to start)`,
        fix: `chmod 700 ${home}`,
      };
    }
    if (mode & 0o007) {
      return {
        name: "home",
        status: "warn",
        detail: `${home} is readable by every user (mode ${mode.toString(8)}): user-account sandboxes could read it`,
        fix: `chmod 700 ${home} (or 750)`,
      };
    }
    return { name: "home", status: "ok", detail: `${home} (mode ${mode.toString(8)})` };
  } catch (e) {
    return { name: "home", status: "warn", detail: `cannot stat ${home}: ${(e as Error).message}` };
  }
}

/** macOS: the root kit (helper, guests' Bun and shims, sudoers rule) that macOS sandboxes need. */
export function checkMacosKit(hostUser: string, exists?: (p: string) => boolean): Check {
  const k = kitPaths(hostUser);
  const missing = kitMissing(k, exists);
  if (missing.length === 0) return { name: "macos kit", status: "ok", detail: `${k.lib} and ${k.sudoers}` };
  return {
    name: "macos kit",
    status: "warn",
    detail: `macOS sandboxes cannot be created: missing ${missing.join(", ")}`,
    fix: "sbx service install (it shows the sudoers rule before it asks sudo to write it)",
  };
}

/** On macOS sandboxes are user accounts by default: Docker is needed only for `--backend docker`, so not a failure. */
function dockerOptional(c: Check): Check {
  if (c.status !== "fail") return c;
  return { ...c, status: "warn", detail: `${c.detail} (only \`--backend docker\` needs Docker here; macOS sandboxes are user accounts)` };
}

/**
 * The parent proxy as the daemon would read it: the config file's `proxy`, else this environment's variables; and on
 * Linux, when image builds reach it through a per-build relay, whether one can be opened on the engine's bridge.
 */
async function parentChecks(deps: DoctorDeps): Promise<Check[]> {
  // A config that cannot be read is reported where it is used (sbx create); the environment's proxy is shown here.
  const p = hostParentSettings(deps.paths, deps.env);
  const secrets = deps.secrets ?? {};
  const [parent, build] = await Promise.all([
    checkParentProxy({ ...p, secrets, ...(deps.parentProbe ? { probe: deps.parentProbe } : {}) }),
    deps.env.platform === "linux" ? checkBuildRelay({ settings: p.settings, secrets, gateway: deps.bridgeGateway ?? (() => new DockerEngine(deps.exec, undefined).bridgeGateway()) }) : null,
  ]);
  return build === null ? [parent] : [parent, build];
}

export async function runDoctor(deps: DoctorDeps): Promise<Check[]> {
  const repos = deps.repos ?? [];
  const [parent, docker, git, cas, ...perRepo] = await Promise.all([
    parentChecks(deps),
    checkDocker(deps.exec),
    checkGit(deps.exec),
    checkCompanyCas({ trust: deps.trust, platform: deps.env.platform, env: deps.env.raw, exec: deps.exec, guard: { forbidden: [deps.paths.sandboxRoot, deps.paths.runtimeDir, deps.paths.stateDir], uid: deps.env.uid } }),
    ...repos.flatMap((r) => [checkHostGc(deps.exec, r), Promise.resolve(checkStores(r)), checkSandboxRemotes(deps.exec, r), checkTokens(deps.exec, r, deps.env.raw, deps.secrets ?? {}), checkPushWorkflows(deps.exec, r)]),
  ]);
  const gc = perRepo;
  // On a Mac: the person's kit and their home's TCC-guarded folders (the person: host-user.ts; never root there).
  const host = deps.env.platform === "darwin" ? await hostUserOf(deps.env, userDirectory(deps.exec, deps.env.platform)) : null;
  return [
    checkBun(deps.bunVersion),
    deps.env.platform === "darwin" ? dockerOptional(docker!) : docker!,
    git!,
    checkDir("state dir", deps.paths.stateDir),
    checkDir("runtime dir", deps.paths.runtimeDir),
    checkHome(deps.env.vars.HOME, deps.env.platform),
    cas!,
    ...(parent as Check[]),
    ...(host
      ? [
          checkMacosKit(host.name),
          checkFullDiskAccess({
            home: host.home,
            repos: deps.macosRepos ?? [],
            daemonProgram: deps.daemonProgram ?? process.execPath,
            terminal: deps.env.raw.TERM_PROGRAM,
            ...(deps.probe ? { probe: deps.probe } : {}),
          }),
        ]
      : []),
    ...(deps.env.platform === "linux" ? [checkConfinement()] : []),
    ...gc,
  ];
}
