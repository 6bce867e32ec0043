// An ssh remote of the host repo (`ssh://user@host/path`, `git@host:owner/repo`) is pushed and fetched through the
// bridge with the host's ssh and ssh agent, against a real sshd on 127.0.0.1: the key never enters the sandbox, the
// push is scanned and held as any other, ssh never prompts, and a sandbox still cannot name an ssh URL of its own.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sshSettingsOf } from "../../../src/bridge/gate-git";
import { startBridge, type StartedBridge } from "../../../src/bridge/server";
import { NO_BRIDGE_SETTINGS } from "../../../src/core/bridge-settings";
import { createExec } from "../../../src/sys/exec";
import { commitOn, git, refIn, sh, SHIMS } from "./harness";

// The system's sshd, else the one install.sh keeps for tests (scripts/test-sshd.sh: the binary only, no ssh service).
const SSHD = ["/usr/sbin/sshd", "/var/cache/sbx/test-tools/sshd"].find((p) => existsSync(p)) ?? "/usr/sbin/sshd";
const isRoot = process.getuid?.() === 0;
const canRun = isRoot && existsSync(SSHD) && Bun.which("ssh-agent") !== null && Bun.which("ssh") !== null;
const why = !isRoot ? "not root (sshd and a login as this user need it)" : !existsSync(SSHD) ? "no sshd (scripts/test-sshd.sh, which install.sh runs as root, puts one in /var/cache/sbx/test-tools)" : "no ssh client or ssh-agent";
const PATH = process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin";

let root = "";
let port = 0;
let sshd: Bun.Subprocess | null = null;
let agent: Bun.Subprocess | null = null;
let agentSock = "";
let sshCommand = "";
let upstream = "";
let host = "";
let clone = "";
const bridges: StartedBridge[] = [];

async function freePort(): Promise<number> {
  const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const p = l.port;
  l.stop(true);
  return p;
}

async function waitFor(ok: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await Bun.sleep(50)) if (await ok()) return true;
  return false;
}

/** A bridge for the clone, reaching ssh remotes as `env` (the daemon's environment) says. */
async function bridge(name: string, env: Record<string, string>) {
  const socket = join(root, name, "bridge.sock");
  const b = await startBridge({
    socketPath: socket,
    sandbox: { id: `ssh-${name}`, name: "demo", workspace: clone, repo: host },
    gateDir: join(root, `gate-${name}`),
    secrets: () => ({}),
    audit: () => undefined,
    exec: createExec({ PATH }),
    path: PATH,
    settings: () => NO_BRIDGE_SETTINGS,
    ssh: sshSettingsOf(env),
  });
  bridges.push(b);
  const shimEnv = { SBX_IN_SANDBOX: "1", SBX_BRIDGE_SOCKET: socket, SBX_BUN: process.execPath, PATH: `${SHIMS}:${PATH}` };
  return (args: string[]) => sh([join(SHIMS, "git"), ...args], { cwd: clone, env: shimEnv });
}

/** One sandbox's bridge with the host's agent (one gate, as a sandbox has), made on first use. */
let agentBridge: ReturnType<typeof bridge> | undefined;
const withAgent = () => (agentBridge ??= bridge("agent", { GIT_SSH_COMMAND: sshCommand, SSH_AUTH_SOCK: agentSock }));

describe.skipIf(!canRun)(`ssh remotes through the bridge, against a real sshd${canRun ? "" : ` (skipped: ${why})`}`, () => {
  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-ssh-")));
    const run = async (argv: string[]) => {
      const r = await sh(argv, { cwd: root });
      if (r.code !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr}`);
    };
    await run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", join(root, "host_key")]);
    await run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", join(root, "id")]);
    writeFileSync(join(root, "authorized_keys"), `restrict ${readFileSync(join(root, "id.pub"), "utf8")}`, { mode: 0o600 });
    port = await freePort();
    writeFileSync(
      join(root, "sshd_config"),
      [
        `ListenAddress 127.0.0.1:${port}`,
        `HostKey ${join(root, "host_key")}`,
        `AuthorizedKeysFile ${join(root, "authorized_keys")}`,
        `PidFile ${join(root, "sshd.pid")}`,
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PermitRootLogin prohibit-password",
        "AllowUsers root",
        "LogLevel ERROR",
      ].join("\n") + "\n",
    );
    mkdirSync("/run/sshd", { recursive: true, mode: 0o755 }); // sshd's privilege-separation dir
    sshd = Bun.spawn([SSHD, "-D", "-e", "-f", join(root, "sshd_config")], { stdout: "ignore", stderr: "pipe" });
    agentSock = join(root, "agent.sock");
    agent = Bun.spawn(["ssh-agent", "-D", "-a", agentSock], { stdout: "ignore", stderr: "ignore" });
    if (!(await waitFor(() => existsSync(agentSock), 5000))) throw new Error("ssh-agent did not start");
    await sh(["ssh-add", "-q", join(root, "id")], { env: { SSH_AUTH_SOCK: agentSock } }).then((r) => {
      if (r.code !== 0) throw new Error(`ssh-add: ${r.stderr}`);
    });
    const hostPub = readFileSync(join(root, "host_key.pub"), "utf8").trim().split(" ").slice(0, 2).join(" ");
    writeFileSync(join(root, "known_hosts"), `[127.0.0.1]:${port} ${hostPub}\n`);
    // The host's own ssh setting, as a user with a private known_hosts would have it (nothing of ~/.ssh is touched).
    sshCommand = `ssh -F /dev/null -o UserKnownHostsFile=${join(root, "known_hosts")} -o StrictHostKeyChecking=yes`;
    const up = await waitFor(async () => (await sh(["sh", "-c", `${sshCommand} -o BatchMode=yes -p ${port} root@127.0.0.1 true`], { env: { SSH_AUTH_SOCK: agentSock } })).code === 0, 10_000);
    if (!up) throw new Error(`sshd did not answer: ${sshd.stderr ? await new Response(sshd.stderr as ReadableStream).text() : ""}`);

    upstream = join(root, "up.git");
    await run(["git", "init", "-q", "--bare", "-b", "main", upstream]);
    host = join(root, "host");
    mkdirSync(host);
    await git(host, "init", "-q", "-b", "main");
    await Bun.write(join(host, "README.md"), "hello\n");
    await git(host, "add", "README.md");
    await git(host, "commit", "-q", "-m", "init");
    await git(host, "push", "-q", upstream, "main");
    await git(host, "remote", "add", "origin", `ssh://root@127.0.0.1:${port}${upstream}`);
    clone = join(root, "clone");
    await git(root, "clone", "-q", "--shared", host, clone);
    // As sbx makes a clone: its remotes carry the host repo's URLs (the bridge uses the host's own, by name).
    await git(clone, "remote", "set-url", "origin", `ssh://root@127.0.0.1:${port}${upstream}`);
  }, 60_000);

  afterAll(async () => {
    for (const b of bridges) await b.close();
    for (const p of [sshd, agent]) {
      p?.kill();
      await p?.exited;
    }
    if (root) rmSync(root, { recursive: true, force: true });
  });

  test("a push to the ssh origin goes out with the host's agent; the sandbox's side holds no key, agent or ssh setting", async () => {
    const shim = await withAgent();
    const sha = await commitOn(clone, "work", { "a.txt": "from the sandbox\n" });
    const r = await shim(["push", "origin", "work:sbx/demo/work"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(await refIn(upstream, "refs/heads/sbx/demo/work")).toBe(sha);
    // The shim ran with no agent socket, no key and no ssh command: the bridge's git used the host's.
    for (const [k, v] of Object.entries(process.env)) if (k.startsWith("SSH_")) expect(r.stdout + r.stderr).not.toContain(v ?? "");
    expect(r.stdout + r.stderr).not.toContain("PRIVATE KEY");
  }, 60_000);

  test("fetch from the ssh origin brings the upstream's new commits", async () => {
    const shim = await withAgent();
    const other = join(root, "other");
    await git(root, "clone", "-q", upstream, other);
    const sha = await commitOn(other, "news", { "n.txt": "news\n" });
    await git(other, "push", "-q", "origin", "news");
    const r = await shim(["fetch", "origin", "news"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(await git(clone, "rev-parse", "refs/remotes/origin/news")).toBe(sha);
  }, 60_000);

  test("the push over ssh is scanned and held like any other: a key-shaped secret never reaches the upstream", async () => {
    const shim = await withAgent();
    await commitOn(clone, "leak", { "k.txt": `id = ${"AKIA"}${"ZZZZYYYYXXXXWWWW"}\n` });
    const r = await shim(["push", "origin", "leak:sbx/demo/leak"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("AWS access key id");
    expect(await refIn(upstream, "refs/heads/sbx/demo/leak")).toBe("");
  }, 60_000);

  test("without the host's agent the push fails at once (ssh never prompts, nothing hangs), and nothing goes out", async () => {
    // A bridge of its own (its own gate): the commit builds on main, which the host repo has.
    const shim = await bridge("noagent", { GIT_SSH_COMMAND: sshCommand });
    await git(clone, "checkout", "-q", "main");
    await commitOn(clone, "lonely", { "l.txt": "x\n" });
    const started = Date.now();
    const r = await shim(["push", "origin", "lonely:sbx/demo/lonely"]);
    expect(r.code).not.toBe(0);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(r.stderr).toMatch(/Permission denied|Could not read from remote/);
    expect(await refIn(upstream, "refs/heads/sbx/demo/lonely")).toBe("");
  }, 60_000);

  test("a sandbox still cannot name an ssh URL of its own, nor smuggle ssh options through one", async () => {
    const shim = await withAgent();
    for (const url of [`ssh://root@127.0.0.1:${port}${upstream}`, `root@127.0.0.1:${upstream}`, "ssh://-oProxyCommand=touch${IFS}/tmp/pwned/x"]) {
      const r = await shim(["fetch", url]);
      expect({ url, code: r.code }).toEqual({ url, code: 77 });
      const l = await shim(["ls-remote", url]);
      expect({ url, code: l.code }).toEqual({ url, code: 77 });
    }
    expect(existsSync("/tmp/pwned")).toBe(false);
  }, 60_000);
});
