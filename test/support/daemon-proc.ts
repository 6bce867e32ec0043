// Test-only: runs the real daemon (test entry: file-backed fake backend, socket guards) as a subprocess on a throwaway runtime dir.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { DaemonClient } from "../../src/client/client";
import { sandboxId } from "../../src/drivers/identity";
import type { SandboxView } from "../../src/daemon/protocol";
import { Store } from "../../src/store/store";
import { readEnv } from "../../src/sys/env";
import { pathsFor, sandboxDir, type Paths } from "../../src/sys/paths";
import { readState, writeState } from "./daemon-file-backend";

export const ROOT = join(import.meta.dir, "..", "..");
export const ENTRY = join(import.meta.dir, "daemon-entry.ts");
export const CLI = join(ROOT, "src", "cli", "main.ts");

export interface World {
  root: string;
  env: Record<string, string>;
  paths: Paths;
  stateFile: string;
  controlDir: string;
  client: DaemonClient;
  store(): Store;
  cleanup(): void;
}

/** A private world: XDG dirs, a backend state file and a guard control dir under one temp root. */
export function makeWorld(): World {
  const root = mkdtempSync(join(tmpdir(), "sbxi-"));
  const env: Record<string, string> = {
    HOME: join(root, "home"),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    XDG_RUNTIME_DIR: join(root, "rt"),
    XDG_STATE_HOME: join(root, "state"),
    XDG_CONFIG_HOME: join(root, "config"),
    XDG_CACHE_HOME: join(root, "cache"),
    NO_COLOR: "1",
    TERM: "xterm",
  };
  mkdirSync(env.HOME!, { recursive: true });
  mkdirSync(env.XDG_RUNTIME_DIR!, { recursive: true, mode: 0o700 });
  const controlDir = join(root, "ctl");
  mkdirSync(controlDir);
  const paths = pathsFor(readEnv({ vars: env, uid: process.getuid!(), gid: process.getgid!(), platform: process.platform }));
  const stores: Store[] = [];
  return {
    root,
    env,
    paths,
    stateFile: join(root, "backend.json"),
    controlDir,
    client: new DaemonClient(paths.controlSocket),
    store() {
      const s = new Store(paths.dbFile);
      stores.push(s);
      return s;
    },
    cleanup() {
      for (const s of stores) s.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export interface DaemonProc {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  pid: number;
  /** Everything it wrote to stderr so far (its log). */
  log(): string;
  exited: Promise<number>;
}

/** Kills a test daemon started by startDaemonProc (ours, by pid) and waits for it to exit; none: nothing to do. */
export async function killDaemonProc(d: DaemonProc | undefined): Promise<void> {
  if (!d) return;
  d.proc.kill("SIGKILL");
  await d.exited;
}

/** Starts the test daemon and waits until /health answers and the first reconcile is done. */
export async function startDaemonProc(w: World, timeoutMs = 10_000, ...modes: ("real-proxy" | "secrets" | "notify")[]): Promise<DaemonProc> {
  const proc = Bun.spawn([process.execPath, ENTRY, w.stateFile, w.controlDir, ...modes], {
    env: w.env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  }) as Subprocess<"ignore", "pipe", "pipe">;
  let log = "";
  void (async () => {
    for await (const chunk of proc.stderr) log += new TextDecoder().decode(chunk);
  })();
  const until = Date.now() + timeoutMs;
  let exitCode: number | null = null;
  void proc.exited.then((c) => (exitCode = c));
  while (!(await w.client.health(300))) {
    if (exitCode !== null) throw new Error(`test daemon exited ${exitCode}: ${log}`);
    if (Date.now() > until) throw new Error(`test daemon did not answer: ${log}`);
    await Bun.sleep(25);
  }
  // /v1 routes wait for the first reconcile: one round trip means it is done.
  await w.client.sandboxes();
  return { proc, pid: proc.pid, log: () => log, exited: proc.exited };
}

/** GET / on a unix socket; null when nothing answers (the fail-closed observation). */
export async function socketGet(path: string): Promise<string | null> {
  try {
    const r = await fetch("http://sandbox/", { unix: path, signal: AbortSignal.timeout(1000) });
    return await r.text();
  } catch {
    return null;
  }
}

export function lockPid(w: World): number | null {
  try {
    return Number.parseInt(readFileSync(join(w.paths.runtimeDir, "daemon.pid"), "utf8"), 10);
  } catch {
    return null;
  }
}

/**
 * A sandbox as `sbx create` leaves it: a store row and a workspace dir; with `phase`, the backend also
 * holds it (running or stopped). Returns its socket-dir id.
 */
export function seedSandbox(w: World, name: string, phase?: "running" | "stopped", repo = "/r"): string {
  const store = w.store();
  const id = sandboxId(w.paths.sandboxRoot, repo, name);
  const dir = sandboxDir(w.paths, repo, name);
  if (!store.findSandbox(repo, name)) store.createSandbox({ name, repo, backend: "fake", identity: { id, dir } });
  mkdirSync(dir, { recursive: true });
  if (phase) {
    const s = readState(w.stateFile);
    s.entries[id] = { id, name, repo, phase };
    writeState(w.stateFile, s);
  }
  return id;
}

/** Starts a sandbox the way every command does (POST /v1/lifecycle/start, from outside any repo), and answers the daemon's view of it. */
export async function startSandbox(w: World, name: string): Promise<SandboxView> {
  await w.client.lifecycle("start", { name, cwd: w.root }, { log() {} });
  const view = (await w.client.sandboxes()).sandboxes.find((s) => s.name === name);
  if (!view) throw new Error(`sandbox ${name} is not listed after its start`);
  return view;
}
