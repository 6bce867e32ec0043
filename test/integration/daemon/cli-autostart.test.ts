// The CLI talks only to the daemon: with none running it starts one in the background (logging to the daemon log) and waits for /health; a daemon that cannot start is reported with its log path.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { CLI, lockPid, makeWorld, type World } from "../../support/daemon-proc";

let w: World;
let started: number | null = null;
afterEach(async () => {
  if (started !== null) {
    try {
      process.kill(started, "SIGTERM");
    } catch {
      /* gone */
    }
    for (let i = 0; i < 50 && existsSync(w.paths.controlSocket); i++) await Bun.sleep(50);
    started = null;
  }
  w?.cleanup();
});

/**
 * The CLI starts the production daemon, whose Docker backend would list (and clean up) the shared engine:
 * a `docker` that always fails keeps this test away from other tests' containers (the daemon fails closed).
 */
function isolateDocker(world: World): void {
  const bin = join(world.root, "bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "docker"), "#!/bin/sh\necho 'docker is stubbed out by this test' >&2\nexit 1\n", { mode: 0o755 });
  world.env.PATH = `${bin}:${world.env.PATH}`;
  world.env.DOCKER_HOST = `unix://${join(world.root, "no-docker.sock")}`;
}

async function sbx(...args: string[]) {
  const p = Bun.spawn([process.execPath, CLI, ...args], { env: w.env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [code, stdout, stderr] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code, stdout, stderr };
}

describe("CLI and the daemon", () => {
  test("status with no daemon says so (exit 69) and does not start one", async () => {
    w = makeWorld();
    isolateDocker(w);
    const r = await sbx("status");
    expect(r.code).toBe(69);
    expect(r.stdout).toContain("daemon: not running");
    expect(existsSync(w.paths.controlSocket)).toBe(false);
  });

  test("ps starts a daemon in the background when none answers; it keeps serving after the CLI exits", async () => {
    w = makeWorld();
    isolateDocker(w);
    const r = await sbx("ps");
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/started the sbx daemon \(pid \d+; log .*daemon\.log\)/);
    started = lockPid(w);
    expect(started).not.toBeNull();
    const h = await w.client.health();
    expect(h?.pid).toBe(started!);
    expect(readFileSync(w.paths.daemonLog, "utf8")).toContain('msg="daemon listening"');

    const st = await sbx("status", "--json");
    expect(st.code).toBe(0);
    const status = JSON.parse(st.stdout);
    expect(status.daemon.pid).toBe(started);
    // The production registry: the Docker backend and the proxy, bridge and ref-sync guards.
    // linux-user joins when the daemon is root and has the tools probeLinuxUser looks for.
    const userOk = process.getuid?.() === 0 && ["nft", "useradd", "setfacl", "getfacl", "setpriv", "pkill", "dmesg"].every((t) => Bun.which(t) !== null);
    expect(status.backends).toEqual(userOk ? ["docker", "linux-user"] : ["docker"]);
    expect(status.guards).toEqual(["proxy", "loopback", "bridge", "ref-sync", "exec-agent", "ports"]);
    // With no engine answering, the daemon fails closed: it logs and removes nothing.
    expect(readFileSync(w.paths.daemonLog, "utf8")).toContain("backend list failed");

    // A second command reuses it: no new daemon.
    const again = await sbx("logs", "--json");
    expect(again.code).toBe(0);
    expect(again.stderr).not.toContain("started the sbx daemon");
    expect(lockPid(w)).toBe(started);
  });

  test("a daemon that cannot start is reported with the log path", async () => {
    w = makeWorld();
    isolateDocker(w);
    // Something that is not a socket sits where the control socket goes: the daemon refuses to start.
    mkdirSync(w.paths.runtimeDir, { recursive: true, mode: 0o700 });
    writeFileSync(w.paths.controlSocket, "not a socket");
    const r = await sbx("ps");
    expect(r.code).toBe(69);
    expect(r.stderr).toContain("the sbx daemon exited at start");
    expect(r.stderr).toContain(w.paths.daemonLog);
    expect(readFileSync(w.paths.daemonLog, "utf8")).toContain("is not a socket");
  });

  test("host-runs-no-guest-config: run from a repo holding a bunfig.toml preload and a .env, neither the CLI (started by its #! line) nor the daemon it starts reads them", async () => {
    w = makeWorld();
    isolateDocker(w);
    // What an agent could leave in a branch the user checks out, then runs sbx in.
    const repo = join(w.root, "evil-repo");
    mkdirSync(repo);
    const marker = join(w.root, "preload-ran");
    writeFileSync(join(repo, "pre.ts"), `require("node:fs").appendFileSync(${JSON.stringify(marker)}, process.argv.join(" ") + "\\n");\n`);
    writeFileSync(join(repo, "bunfig.toml"), `preload = ["./pre.ts"]\n`);
    writeFileSync(join(repo, ".env"), `XDG_STATE_HOME=${join(repo, "state-from-dotenv")}\n`);
    // Control: a Bun started the plain way in that directory reads both.
    const plain = Bun.spawnSync([process.execPath, "-e", "console.log(process.env.XDG_STATE_HOME ?? '')"], { cwd: repo, env: { PATH: w.env.PATH! } });
    expect(plain.stdout.toString().trim()).toBe(join(repo, "state-from-dotenv"));
    expect(existsSync(marker)).toBe(true);
    rmSync(marker);

    // The CLI as installed (the file itself, through its #! line), with XDG_STATE_HOME unset so .env could set it.
    const { XDG_STATE_HOME: _unset, ...env } = w.env;
    const run = (...args: string[]) => Bun.spawnSync([CLI, ...args], { cwd: repo, env: { ...env, PATH: `${dirname(process.execPath)}:${env.PATH}` }, stdout: "pipe", stderr: "pipe" });
    const doc = run("doctor", "--json");
    const stateDir = JSON.parse(doc.stdout.toString()).checks.find((c: { name: string }) => c.name === "state dir");
    expect(stateDir.detail).not.toContain("state-from-dotenv");
    // And the daemon it starts (in /, with the same flags): ps starts one.
    const ps = run("ps");
    expect(ps.stderr.toString()).toMatch(/started the sbx daemon/);
    started = lockPid(w);
    expect(started).not.toBeNull();
    expect(readlinkSync(`/proc/${started}/cwd`)).toBe("/");
    expect(existsSync(marker)).toBe(false);
  });
});

