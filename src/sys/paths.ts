// Where sbx keeps things: state, config, per-repo sandbox dirs, and sockets short enough for sun_path.
import { basename, join } from "node:path";
import type { Env } from "./env";
import type { SandboxSockets } from "../core/spec";

/** sun_path is 108 bytes including the terminating NUL; longer paths are silently truncated. */
export const MAX_SOCKET_PATH = 107;

/** Sandbox ids used in socket paths are this many characters. */
export const SOCKET_ID_LENGTH = 12;

/** The longest leaf sbx puts under the runtime dir: `/sb/<id>/bridge.sock`. */
const LONGEST_SOCKET_LEAF = `/sb/${"x".repeat(SOCKET_ID_LENGTH)}/bridge.sock`;

export interface Paths {
  readonly stateDir: string;
  readonly configDir: string;
  readonly cacheDir: string;
  readonly sandboxRoot: string;
  /** The host's agent cache (`sbx run AGENT`): src/agents/cache.ts. */
  readonly agentsDir: string;
  readonly runtimeDir: string;
  readonly dbFile: string;
  readonly configFile: string;
  readonly daemonLog: string;
  readonly controlSocket: string;
}

function homeBased(v: string | undefined, home: string, rel: string): string {
  return v ?? join(home, rel);
}

export function runtimeDirFor(env: Env): string {
  const xdg = env.vars.XDG_RUNTIME_DIR;
  if (xdg !== undefined) {
    const dir = join(xdg, "sbx");
    if (Buffer.byteLength(dir + LONGEST_SOCKET_LEAF) <= MAX_SOCKET_PATH) return dir;
  }
  // Short fallback: /tmp/sbx-<uid> always fits.
  return `/tmp/sbx-${env.uid}`;
}

export function pathsFor(env: Env): Paths {
  const home = env.vars.HOME;
  const stateDir = join(homeBased(env.vars.XDG_STATE_HOME, home, ".local/state"), "sbx");
  const configDir = join(homeBased(env.vars.XDG_CONFIG_HOME, home, ".config"), "sbx");
  const cacheDir = homeBased(env.vars.XDG_CACHE_HOME, home, ".cache");
  const runtimeDir = runtimeDirFor(env);
  return {
    stateDir,
    configDir,
    cacheDir,
    sandboxRoot: join(cacheDir, "sandbox"),
    agentsDir: join(cacheDir, "sbx", "agents"),
    runtimeDir,
    dbFile: join(stateDir, "sbx.db"),
    configFile: join(configDir, "config.json"),
    daemonLog: join(stateDir, "daemon.log"),
    controlSocket: join(runtimeDir, "control.sock"),
  };
}

/** Bun's hasher rather than node:crypto, whose loading costs 8–12 ms on every CLI call. */
export function sha256Hex(s: string): string {
  return new Bun.CryptoHasher("sha256").update(s).digest("hex");
}

/** `<sandboxRoot>/<repo-root-dir-name>-<sha256 of the repo root's absolute real path>`. */
export function repoSandboxDir(paths: Paths, repoRealPath: string): string {
  return join(paths.sandboxRoot, `${basename(repoRealPath)}-${sha256Hex(repoRealPath)}`);
}

/** A sandbox's own dir: its clone, its overlay dirs, the symlink to the host repo. */
export function sandboxDir(paths: Paths, repoRealPath: string, name: string): string {
  return join(repoSandboxDir(paths, repoRealPath), name);
}

export type { SandboxSockets };

/** One directory per sandbox, mounted whole into it (never the socket file itself). */
export function sandboxSockets(paths: Paths, id: string): SandboxSockets {
  const dir = join(paths.runtimeDir, "sb", id);
  return { dir, proxy: join(dir, "proxy.sock"), bridge: join(dir, "bridge.sock") };
}
