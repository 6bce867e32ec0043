// Shared set-up for the Linux user-backend e2e tests: a normal host user with a 700 home and a repo, a private root and nft table.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { HostUser, SandboxSpec } from "../../../src/core/spec";
import { LinuxUserBackend } from "../../../src/drivers/linux-user/backend";
import { createExec } from "../../../src/sys/exec";
import { defaultRuntime } from "../../../src/drivers/docker/docker";

/**
 * For tests of the real CLI as root: a temp root with a repo (one commit) and an environment of its own (HOME, XDG
 * dirs, runtime dir), so the daemon it starts and its state are the test's.
 */
export function cliWorld(prefix: string, extraEnv: Record<string, string> = {}): { root: string; repo: string; env: Record<string, string> } {
  const root = mkdtempSync(`/tmp/${prefix}-`);
  const repo = join(root, "repo");
  mkdirSync(repo);
  const home = join(root, "home");
  mkdirSync(home, { mode: 0o700 });
  const env = {
    PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: home,
    USER: "root",
    XDG_STATE_HOME: join(root, "state"),
    XDG_CONFIG_HOME: join(root, "config"),
    XDG_CACHE_HOME: join(root, "cache"),
    XDG_RUNTIME_DIR: join(root, "run"),
    NO_COLOR: "1",
    ...extraEnv,
  };
  mkdirSync(env.XDG_RUNTIME_DIR, { mode: 0o700 });
  must(["git", "-C", repo, "init", "-q", "-b", "main"]);
  writeFileSync(join(repo, "README"), "hello\n");
  must(["git", "-C", repo, "add", "README"]);
  must(["git", "-C", repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"]);
  return { root, repo, env };
}

function has(tool: string): boolean {
  return spawnSync("which", [tool]).status === 0;
}

/** Root plus the tools the backend runs; the reason string names what is missing. */
export function whyNot(): string | undefined {
  if (process.getuid?.() !== 0) return "needs root (creates users and nft rules)";
  for (const t of ["nft", "useradd", "setfacl", "setpriv", "git", "ip"]) if (!has(t)) return `needs ${t}`;
  return undefined;
}

export function sh(argv: string[], opts: { input?: string } = {}): { code: number; out: string; err: string } {
  const r = spawnSync(argv[0]!, argv.slice(1), { input: opts.input, encoding: "utf8" });
  return { code: r.status ?? -1, out: r.stdout ?? "", err: r.stderr ?? "" };
}

export function must(argv: string[], opts: { input?: string } = {}): string {
  const r = sh(argv, opts);
  if (r.code !== 0) throw new Error(`${argv.join(" ")} exited ${r.code}: ${r.err}`);
  return r.out;
}

/**
 * A network namespace of the test's own, joined to the host by a veth pair: `<net>.1` on the host side, `<net>.2`
 * inside, both up, and loopback up inside. The caller deletes the host end and the namespace.
 * runs: ip netns add; ip link add … type veth peer …; ip link set …; ip addr add …
 */
export function makeNetns(o: { ns: string; vethHost: string; vethNs: string; net: string }): void {
  must(["ip", "netns", "add", o.ns]);
  must(["ip", "link", "add", o.vethHost, "type", "veth", "peer", "name", o.vethNs]);
  must(["ip", "link", "set", o.vethNs, "netns", o.ns]);
  must(["ip", "addr", "add", `${o.net}.1/30`, "dev", o.vethHost]);
  must(["ip", "link", "set", o.vethHost, "up"]);
  must(["ip", "-n", o.ns, "addr", "add", `${o.net}.2/30`, "dev", o.vethNs]);
  must(["ip", "-n", o.ns, "link", "set", o.vethNs, "up"]);
  must(["ip", "-n", o.ns, "link", "set", "lo", "up"]);
}

export interface World {
  tag: string;
  host: HostUser;
  repo: string;
  root: string;
  table: string;
  backend: LinuxUserBackend;
  warnings: string[];
  spec(name: string, port?: number): SandboxSpec;
  teardown(): Promise<void>;
}

/** A host user `sbxh<hex>` (home 700 with a one-commit repo), a backend rooted in a private dir and nft table. */
export async function makeWorld(): Promise<World> {
  const tag = randomBytes(3).toString("hex");
  const name = `sbxh${tag}`;
  const home = `/home/${name}`;
  must(["useradd", "--create-home", "--home-dir", home, "--shell", "/bin/bash", "--comment", "sbx e2e host user", name]);
  must(["chmod", "700", home]);
  const uid = Number(must(["id", "-u", name]).trim());
  const gid = Number(must(["id", "-g", name]).trim());
  const host: HostUser = { name, uid, gid, home, shell: "/bin/bash" };
  const repo = `${home}/src/proj`;
  const asHost = (argv: string[]) => must(["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--init-groups", "--reset-env", "--", ...argv]);
  asHost(["mkdir", "-p", repo]);
  asHost(["git", "-C", repo, "init", "-q", "-b", "main"]);
  asHost(["sh", "-c", `cd ${repo} && echo hello > README && git add README && git -c user.name=t -c user.email=t@t commit -qm init`]);
  const root = `/var/lib/sbx-e2e-${tag}`;
  const table = `sbxe2e${tag}`;
  const warnings: string[] = [];
  // With sbx's Bun and shims, as the daemon runs it: guests get their rc files, shims and confinement (confine.ts).
  const backend = new LinuxUserBackend({ exec: createExec(process.env as Record<string, string>), root, table, runtime: defaultRuntime(), warn: (m) => warnings.push(m) });
  let n = 0;
  return {
    tag,
    host,
    repo,
    root,
    table,
    backend,
    warnings,
    spec(sname, port) {
      n++;
      const id = `${tag}${String(n).padStart(6, "0")}`;
      return {
        id,
        name: sname,
        repo,
        dir: `${root}/unused/${id}`,
        hostUser: host,
        sockets: { dir: `/tmp/sbx-e2e-${tag}/sb/${id}`, proxy: `/tmp/sbx-e2e-${tag}/sb/${id}/proxy.sock`, bridge: `/tmp/sbx-e2e-${tag}/sb/${id}/bridge.sock` },
        env: { SANDBOX: sname },
        overlays: [],
        options: { driver: "user", proxyPort: port ?? 20000 + n },
      };
    },
    async teardown() {
      // Everything the backend made under this world's root, then the world itself.
      await backend.cleanup(new Set()).catch(() => undefined);
      sh(["nft", "delete", "table", "inet", table]);
      rmSync(root, { recursive: true, force: true });
      sh(["pkill", "-KILL", "-u", String(uid)]);
      sh(["userdel", "--remove", name]);
      rmSync(`/tmp/sbx-e2e-${tag}`, { recursive: true, force: true });
    },
  };
}
