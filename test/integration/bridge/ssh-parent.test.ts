// The bridge's git over ssh behind a company proxy that wants credentials (test/support/fake-parent.ts): the ssh remote's
// sshd is reachable only through the proxy (the proxy alone reaches it, as `sshd -i` behind a unix socket; nothing listens
// at the address the remote names, so an ssh that goes straight out is refused), and the relay's tunnel for it is good
// for exactly that host:port during that call. Beside it a listening sshd on 127.0.0.1 for what goes straight out.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sshSettingsOf } from "../../../src/bridge/gate-git";
import { defaultSshHelper } from "../../../src/bridge/gate-ssh";
import { startBridge, type StartedBridge } from "../../../src/bridge/server";
import { NO_BRIDGE_SETTINGS } from "../../../src/core/bridge-settings";
import { parentFromConfig } from "../../../src/core/parent-proxy";
import { createExec } from "../../../src/sys/exec";
import { ParentRouter } from "../../../src/sys/parent";
import { ParentRelay } from "../../../src/sys/parent-relay";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";
import { commitOn, git, refIn, sh, SHIMS } from "./harness";

const SSHD = ["/usr/sbin/sshd", "/var/cache/sbx/test-tools/sshd"].find((p) => existsSync(p)) ?? "/usr/sbin/sshd";
const isRoot = process.getuid?.() === 0;
const canRun = isRoot && existsSync(SSHD) && Bun.which("ssh") !== null;
const why = !isRoot ? "not root (sshd needs it)" : !existsSync(SSHD) ? "no sshd (scripts/test-sshd.sh puts one in /var/cache/sbx/test-tools)" : "no ssh client";
const PATH = process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin";
const PASSWORD = "ssh-Pa55word-corp";
const corp = `Basic ${Buffer.from(`corp:${PASSWORD}`).toString("base64")}`;
/** The address the company's git server has: on loopback so nothing leaves the machine, and nothing listens there. */
const FAR = "127.0.0.42";

let root = "";
let farPort = 0;
let nearPort = 0;
let sshd: Bun.Subprocess | null = null;
let site: Server | null = null;
let parent: FakeParent;
let upstream = "";
let host = "";
let clone = "";
let sshCommand = "";
const relays: ParentRelay[] = [];
const bridges: StartedBridge[] = [];

async function freePort(address: string): Promise<number> {
  const l = Bun.listen({ hostname: address, port: 0, socket: { data() {} } });
  const p = l.port;
  l.stop(true);
  return p;
}

function relayOf(noProxy: string[] = []): ParentRelay {
  const r = new ParentRelay(new ParentRouter(parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN", noProxy }).settings, (n) => (n === "PROXY_LOGIN" ? `corp:${PASSWORD}` : null)));
  relays.push(r);
  return r;
}

/** A sandbox's bridge (its own gate) whose ssh is `command`, lent `relay` when given. */
async function bridge(name: string, relay: ParentRelay | null, command = sshCommand) {
  const socket = join(root, name, "bridge.sock");
  mkdirSync(join(root, name), { recursive: true });
  const b = await startBridge({
    socketPath: socket,
    sandbox: { id: `sshp-${name}`, name: "demo", workspace: clone, repo: host },
    gateDir: join(root, `gate-${name}`),
    secrets: () => ({}),
    audit: () => undefined,
    exec: createExec({ PATH }),
    path: PATH,
    settings: () => NO_BRIDGE_SETTINGS,
    ssh: sshSettingsOf({ GIT_SSH_COMMAND: command }),
    ...(relay ? { parent: relay } : {}),
  });
  bridges.push(b);
  const shimEnv = { SBX_IN_SANDBOX: "1", SBX_BRIDGE_SOCKET: socket, SBX_BUN: process.execPath, PATH: `${SHIMS}:${PATH}` };
  return (args: string[]) => sh([join(SHIMS, "git"), ...args], { cwd: clone, env: shimEnv });
}

/** A CONNECT to the relay with `password`: the relay's status. */
async function connectVia(relay: string, password: string | null, target: string): Promise<number> {
  const [h, p] = relay.split(":");
  return new Promise<number>((resolve, reject) => {
    const s = connect({ host: h!, port: Number(p) });
    let buf = "";
    s.on("error", reject);
    s.on("connect", () => s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${password !== null ? `Proxy-Authorization: Basic ${Buffer.from(`sbx:${password}`).toString("base64")}\r\n` : ""}\r\n`));
    s.on("data", (d) => {
      buf += d.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(buf);
      if (m) {
        s.destroy();
        resolve(Number(m[1]));
      }
    });
  });
}

describe.skipIf(!canRun)(`parent-proxy-scope: ssh remotes through the parent proxy, against a real sshd${canRun ? "" : ` (skipped: ${why})`}`, () => {
  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-sshp-")));
    const run = async (argv: string[]) => {
      const r = await sh(argv, { cwd: root });
      if (r.code !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr}`);
    };
    await run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", join(root, "host_key")]);
    await run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", join(root, "id")]);
    writeFileSync(join(root, "authorized_keys"), `restrict ${readFileSync(join(root, "id.pub"), "utf8")}`, { mode: 0o600 });
    farPort = await freePort(FAR);
    nearPort = await freePort("127.0.0.1");
    const sshdConfig = join(root, "sshd_config");
    writeFileSync(sshdConfig, [`ListenAddress 127.0.0.1:${nearPort}`, `HostKey ${join(root, "host_key")}`, `AuthorizedKeysFile ${join(root, "authorized_keys")}`, `PidFile ${join(root, "sshd.pid")}`, "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "PermitRootLogin prohibit-password", "AllowUsers root", "LogLevel ERROR"].join("\n") + "\n");
    mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
    sshd = Bun.spawn([SSHD, "-D", "-e", "-f", sshdConfig], { stdout: "ignore", stderr: "ignore" });
    // The company's git server: an sshd per connection (inetd mode) behind a unix socket only the proxy dials.
    const siteSock = join(root, "site.sock");
    site = createServer((c) => {
      const p = Bun.spawn([SSHD, "-i", "-e", "-f", sshdConfig], { stdin: "pipe", stdout: "pipe", stderr: "ignore" });
      c.on("data", (d) => void p.stdin.write(d));
      c.on("end", () => void p.stdin.end());
      c.on("error", () => p.kill());
      void (async () => {
        for await (const chunk of p.stdout) c.write(chunk);
        c.end();
      })();
    });
    await new Promise<void>((r) => site!.listen(siteSock, r));
    parent = await startFakeParent({ sites: { [`${FAR}:${farPort}`]: siteSock, "forge.test:2222": siteSock }, credentials: `corp:${PASSWORD}` });

    const hostPub = readFileSync(join(root, "host_key.pub"), "utf8").trim().split(" ").slice(0, 2).join(" ");
    writeFileSync(join(root, "known_hosts"), `* ${hostPub}\n`);
    // The host user's ssh config: an alias for the company's server, a host with their own ProxyCommand, and one whose
    // HostName is a shell command.
    writeFileSync(
      join(root, "ssh_config"),
      [`Host corp-git`, `  HostName ${FAR}`, `  Port ${farPort}`, `Host own-proxy`, `  HostName ${FAR}`, `  Port ${farPort}`, `  ProxyCommand ${SSHD} -i -f ${sshdConfig}`, `Host evil-name`, "  HostName a$(touch${IFS}PWN)b"].join("\n") + "\n",
    );
    sshCommand = `ssh -F ${join(root, "ssh_config")} -i ${join(root, "id")} -o IdentitiesOnly=yes -o UserKnownHostsFile=${join(root, "known_hosts")} -o StrictHostKeyChecking=yes`;

    upstream = join(root, "up.git");
    await run(["git", "init", "-q", "--bare", "-b", "main", upstream]);
    host = join(root, "host");
    mkdirSync(host);
    await git(host, "init", "-q", "-b", "main");
    await Bun.write(join(host, "README.md"), "hello\n");
    await git(host, "add", "README.md");
    await git(host, "commit", "-q", "-m", "init");
    await git(host, "push", "-q", upstream, "main");
    const remotes: Record<string, string> = {
      far: `ssh://root@${FAR}:${farPort}${upstream}`,
      alias: `root@corp-git:${upstream}`,
      near: `ssh://root@127.0.0.1:${nearPort}${upstream}`,
      own: `root@own-proxy:${upstream}`,
      evil: `ssh://root@a$(touch\${IFS}PWN)b${upstream}`,
      evilpct: `ssh://root@a%25hb${upstream}`,
      evildash: `ssh://root@-oProxyCommand=touch\${IFS}PWN${upstream}`,
      evilscp: `root@-evil:${upstream}`,
      evilname: `root@evil-name:${upstream}`,
    };
    clone = join(root, "clone");
    await git(root, "clone", "-q", "--shared", host, clone);
    for (const [name, url] of Object.entries(remotes)) {
      await git(host, "remote", "add", name, url);
      await git(clone, "remote", "add", name, url);
    }
  }, 60_000);

  afterAll(async () => {
    for (const b of bridges) await b.close();
    for (const r of relays) r.close();
    await parent?.close();
    site?.close();
    sshd?.kill();
    await sshd?.exited;
    if (root) rmSync(root, { recursive: true, force: true });
  });

  test("a push to an ssh:// remote goes through the parent: one CONNECT to exactly its host:port, with the real credentials; none stays lent", async () => {
    const relay = relayOf();
    const shim = await bridge("far", relay);
    const sha = await commitOn(clone, "far", { "far.txt": "through the proxy\n" });
    parent.seen.length = 0;
    const r = await shim(["push", "far", "far:sbx/demo/far"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(await refIn(upstream, "refs/heads/sbx/demo/far")).toBe(sha);
    expect(parent.seen.length).toBeGreaterThan(0);
    expect(parent.seen.every((s) => s.method === "CONNECT" && s.target === `${FAR}:${farPort}` && s.authorization === corp)).toBe(true);
    expect(relay.active()).toBe(0);
    // A fetch takes the same way.
    parent.seen.length = 0;
    const f = await shim(["fetch", "far", "sbx/demo/far"]);
    expect({ code: f.code, err: f.code === 0 ? "" : f.stderr }).toEqual({ code: 0, err: "" });
    expect(parent.seen.map((s) => [s.target, s.authorization])).toContainEqual([`${FAR}:${farPort}`, corp]);
    expect(relay.active()).toBe(0);
  }, 60_000);

  test("a scp-like remote through the user's ssh alias goes to the host and port the alias names (ssh -G), through the parent", async () => {
    const relay = relayOf();
    const shim = await bridge("alias", relay);
    await git(clone, "checkout", "-q", "main");
    const sha = await commitOn(clone, "alias", { "alias.txt": "alias\n" });
    parent.seen.length = 0;
    const r = await shim(["push", "alias", "alias:sbx/demo/alias"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(await refIn(upstream, "refs/heads/sbx/demo/alias")).toBe(sha);
    expect(parent.seen.map((s) => [s.target, s.authorization])).toContainEqual([`${FAR}:${farPort}`, corp]);
    expect(parent.seen.every((s) => s.target === `${FAR}:${farPort}`)).toBe(true);
    expect(relay.active()).toBe(0);
  }, 60_000);

  test("no credential of the parent in ssh's argv or environment, nor the helper's argv: only the one-call password, dead after the call", async () => {
    const dump = join(root, "ssh-dump.log");
    const wrapper = join(root, "ssh-dump.sh");
    // The host's ssh command, wrapped: each ssh the gate runs writes its argv and environment, then runs as before.
    writeFileSync(wrapper, `#!/bin/sh\n{ printf 'ARGV'; printf ' %s' "$@"; printf '\\n'; env; } >> ${dump}\nexec "$@"\n`, { mode: 0o755 });
    const relay = relayOf();
    const shim = await bridge("dump", relay, `${wrapper} ${sshCommand}`);
    await git(clone, "checkout", "-q", "main");
    await commitOn(clone, "dump", { "d.txt": "d\n" });
    const r = await shim(["push", "far", "dump:sbx/demo/dump"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    const seen = readFileSync(dump, "utf8");
    expect(seen).toContain("ProxyCommand=");
    expect(seen).not.toContain(PASSWORD);
    expect(seen).not.toContain(corp.slice("Basic ".length));
    const argv = seen.split("\n").filter((l) => l.startsWith("ARGV"));
    const password = /^SBX_PARENT_RELAY_PASSWORD=(.+)$/m.exec(seen)?.[1] ?? "";
    const relayAt = /^SBX_PARENT_RELAY=(.+)$/m.exec(seen)?.[1] ?? "";
    expect(password).not.toBe("");
    for (const a of argv) expect(a).not.toContain(password);
    expect(relay.active()).toBe(0);
    expect(await connectVia(relayAt, password, `${FAR}:${farPort}`)).toBe(407);
  }, 60_000);

  test("a host NO_PROXY covers goes straight out, and so does every ssh remote when there is no parent: the parent hears nothing", async () => {
    parent.seen.length = 0;
    for (const [name, relay] of [["noproxy", relayOf(["127.0.0.1"])], ["noparent", null]] as const) {
      const shim = await bridge(name, relay);
      await git(clone, "checkout", "-q", "main");
      const sha = await commitOn(clone, name, { [`${name}.txt`]: "near\n" });
      const r = await shim(["push", "near", `${name}:sbx/demo/${name}`]);
      expect({ name, code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ name, code: 0, err: "" });
      expect(await refIn(upstream, `refs/heads/sbx/demo/${name}`)).toBe(sha);
    }
    expect(parent.seen).toEqual([]);
  }, 60_000);

  test("the user's own ProxyCommand for a host wins over sbx's: the push goes their way, the relay lends nothing", async () => {
    const relay = relayOf();
    const shim = await bridge("own", relay);
    await git(clone, "checkout", "-q", "main");
    const sha = await commitOn(clone, "own", { "own.txt": "own\n" });
    parent.seen.length = 0;
    const r = await shim(["push", "own", "own:sbx/demo/own"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(await refIn(upstream, "refs/heads/sbx/demo/own")).toBe(sha);
    expect(parent.seen).toEqual([]);
    expect(relay.active()).toBe(0);
  }, 60_000);

  test("injection through the remote's host or its ssh HostName: refused before any ssh runs, nothing executed", async () => {
    const relay = relayOf();
    const shim = await bridge("evil", relay);
    await git(clone, "checkout", "-q", "main");
    await commitOn(clone, "evil", { "e.txt": "e\n" });
    parent.seen.length = 0;
    for (const remote of ["evil", "evilpct", "evildash", "evilscp", "evilname"]) {
      const r = await shim(["push", remote, "evil:sbx/demo/evil"]);
      expect({ remote, code: r.code }).not.toEqual({ remote, code: 0 });
      expect({ remote, err: r.stderr }).toMatchObject({ remote, err: expect.stringContaining("not a plain host") });
    }
    expect(existsSync(join(root, "PWN"))).toBe(false);
    expect(existsSync(join(root, `gate-evil`, "gate.git", "PWN"))).toBe(false);
    expect(parent.seen).toEqual([]);
    expect(relay.active()).toBe(0);
  }, 60_000);
});

describe("parent-proxy-scope: an ssh tunnel's password is for exactly one host:port, for one call", () => {
  let p: FakeParent;
  let echo: Server;
  const relays: ParentRelay[] = [];
  beforeAll(async () => {
    echo = createServer((c) => c.pipe(c));
    await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
    p = await startFakeParent({ sites: { "forge.test:2222": (echo.address() as { port: number }).port }, credentials: `corp:${PASSWORD}` });
  });
  afterAll(async () => {
    for (const r of relays) r.close();
    await p.close();
    echo.close();
  });
  const relay = (noProxy: string[] = []) => {
    const r = new ParentRelay(new ParentRouter(parentFromConfig({ url: p.url, credentials: "PROXY_LOGIN", noProxy }).settings, (n) => (n === "PROXY_LOGIN" ? `corp:${PASSWORD}` : null)));
    relays.push(r);
    return r;
  };

  test("its host:port opens with the real credentials; another host, another port, a name under it, the parent itself, loopback and private addresses never reach the parent", async () => {
    const r = relay();
    const lease = (await r.tunnel("forge.test", 2222))!;
    expect(lease).not.toBeNull();
    p.seen.length = 0;
    expect(await connectVia(lease.relay, lease.password, "forge.test:2222")).toBe(200);
    const refused: Record<string, number> = {};
    for (const t of ["forge.test:443", "forge.test:22", "git.forge.test:2222", "evil.test:2222", `127.0.0.1:${p.port}`, "127.0.0.1:2222", "10.0.0.5:2222", "[::1]:2222", "169.254.169.254:80"]) refused[t] = await connectVia(lease.relay, lease.password, t);
    expect(Object.values(refused).every((s) => s === 403)).toBe(true);
    expect(p.seen.map((s) => [s.target, s.authorization])).toEqual([["forge.test:2222", corp]]);
    expect(await connectVia(lease.relay, null, "forge.test:2222")).toBe(407);
    lease.release();
    expect(r.active()).toBe(0);
    expect(await connectVia(lease.relay, lease.password, "forge.test:2222")).toBe(407);
    expect(p.seen.length).toBe(1);
  });

  test("the helper carries bytes both ways on its lease, and says the relay's refusal (never a password) once the lease is gone", async () => {
    const r = relay();
    const lease = (await r.tunnel("forge.test", 2222))!;
    const helper = async (stdin: string) => {
      const h = Bun.spawn([...defaultSshHelper(), "forge.test", "2222"], { env: { PATH, SBX_PARENT_RELAY: lease.relay, SBX_PARENT_RELAY_PASSWORD: lease.password }, stdin: Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([new Response(h.stdout).text(), new Response(h.stderr).text(), h.exited]);
      return { out, err, code };
    };
    expect(await helper("ping over the tunnel\n")).toEqual({ out: "ping over the tunnel\n", err: "", code: 0 });
    lease.release();
    const after = await helper("x");
    expect(after.code).toBe(1);
    expect(after.err).toContain("407");
    expect(after.err).not.toContain(lease.password);
    expect(after.err).not.toContain(PASSWORD);
  });

  test("a host NO_PROXY covers gets no tunnel (straight out); a name not in normal form gets none either", async () => {
    const r = relay([".corp", "10.0.0.0/8"]);
    expect(await r.tunnel("git.corp", 22)).toBeNull();
    expect(await r.tunnel("10.1.2.3", 22)).toBeNull();
    expect(await r.tunnel("Forge.Test", 22)).toBeNull();
    expect(await r.tunnel("forge.test", 0)).toBeNull();
    expect(r.active()).toBe(0);
  });
});
