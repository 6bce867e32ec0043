// Invariants no-direct-egress and sandboxes-apart for `--backend user`, through the daemon's real wiring: loopback port → proxy, nft, kernel-log audit.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, type ChildProcess } from "node:child_process";
import type { Sandbox } from "../../../src/core/schemas";
import { makeDaemonWorld, type DaemonWorld } from "./daemon-world";
import { makeNetns, makeWorld, must, sh, whyNot, type World } from "./harness";

const skip = whyNot() ?? (sh(["which", "curl"]).code === 0 ? undefined : "needs curl");

/** A TCP listener on 8080 and a UDP one on 53 inside the test's own network namespace; prints what reaches it. */
const NS_SERVER = `
const seen = (what) => process.stdout.write(what + "\\n");
Bun.listen({ hostname: "0.0.0.0", port: 8080, socket: { open(s) { seen("tcp"); s.end("hi\\n"); }, data() {} } });
await Bun.udpSocket({ hostname: "0.0.0.0", port: 53, socket: { data() { seen("udp"); } } });
seen("ready");
`;

describe.skipIf(skip !== undefined)(`no-direct-egress (--backend user, daemon wiring)${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let d: DaemonWorld;
  let sb: Sandbox;
  let other: Sandbox;
  let port = 0;
  let otherPort = 0;
  let allowedHits = 0;
  let deniedHits = 0;
  let allowed: ReturnType<typeof Bun.serve>;
  let denied: ReturnType<typeof Bun.serve>;
  const n = process.pid % 100000;
  const ns = `sbxue${n}`;
  const vethHost = `vsu${n}a`;
  const vethNs = `vsu${n}b`;
  const net = `10.232.${process.pid % 250}`;
  const target = `${net}.2`;
  let nsServer: ChildProcess | undefined;
  let nsOut = "";

  beforeAll(async () => {
    w = await makeWorld();
    d = await makeDaemonWorld(w);
    // Two loopback sites on their own 127.0.0.x addresses: one allowlisted explicitly (address and port), one not.
    allowed = Bun.serve({ hostname: "127.0.0.5", port: 0, fetch: () => (allowedHits++, new Response("allowed-ok\n")) });
    denied = Bun.serve({ hostname: "127.0.0.6", port: 0, fetch: () => (deniedHits++, new Response("should-not-see\n")) });

    sb = (await d.users.create({ name: "egress", cwd: w.repo })).sandbox;
    other = (await d.users.create({ name: "other", cwd: w.repo })).sandbox;
    const portOf = (row: typeof sb) => {
      const o = d.spec(row).options;
      if (o.driver !== "user") throw new Error("not a user-account spec");
      return o.proxyPort;
    };
    port = portOf(sb);
    otherPort = portOf(other);
    // The test site is the host's own (loopback): published for this sandbox, as `sbx publish` stores it.
    d.store.updateIdentity(sb.id, { ...sb.identity, publish: [`127.0.0.5:${allowed.port}`] });

    makeNetns({ ns, vethHost, vethNs, net });
    const srv = spawn("ip", ["netns", "exec", ns, process.execPath, "-e", NS_SERVER], { stdio: ["ignore", "pipe", "inherit"] });
    nsServer = srv;
    await new Promise<void>((resolve) => {
      srv.stdout!.on("data", (b: Buffer) => {
        nsOut += b.toString();
        if (nsOut.includes("ready")) resolve();
      });
    });
    await d.kernelLog.poll(); // from now on
  }, 120_000);

  afterAll(async () => {
    nsServer?.kill("SIGKILL");
    sh(["ip", "link", "del", vethHost]);
    sh(["ip", "netns", "del", ns]);
    for (const s of [sb, other]) if (s) await d.users.rm(s.name, { cwd: w.repo, force: true }).catch((e) => console.error(e));
    allowed?.stop(true);
    denied?.stop(true);
    await d?.close();
    await w?.teardown();
  }, 60_000);

  test("the daemon gave each sandbox its own stable port, stored in its identity, and a guest account", () => {
    expect(port).toBeGreaterThanOrEqual(21000);
    expect(otherPort).not.toBe(port);
    expect((d.store.getSandbox(sb.id)!.identity as { proxyPort: number }).proxyPort).toBe(port);
    expect(d.store.getSandbox(sb.id)!.backend).toBe("linux-user");
    expect(d.view(d.store.getSandbox(sb.id)!).guards.map((g) => [g.name, g.ok])).toEqual([
      ["proxy", true],
      ["loopback", true],
      ["bridge", true],
      ["ref-sync", true],
    ]);
  });

  /** Whether the sandbox's proxy accepts on the loopback port itself (the loopback guard handed its listener over). */
  async function proxyAcceptsOnPort(s: Sandbox): Promise<string> {
    let detail = "";
    for (let i = 0; i < 50; i++) {
      detail = d.view(d.store.getSandbox(s.id)!).guards.find((g) => g.name === "loopback")?.detail ?? "";
      if (detail.includes("the proxy accepts on it")) break;
      await Bun.sleep(50);
    }
    return detail;
  }

  test("one relay: the proxy accepts on the loopback port itself (the port's listener handed over in-process)", async () => {
    expect(await proxyAcceptsOnPort(sb)).toBe(`127.0.0.1:${port} → proxy (the proxy accepts on it)`);
  });

  test("as the guest, HTTP_PROXY points at 127.0.0.1:<port> and an allowlisted loopback site answers through it", async () => {
    const r = await d.asGuest(sb, `echo "$HTTP_PROXY"; curl -sS -m 5 http://127.0.0.5:${allowed.port}/`);
    expect(r.out).toContain(`http://127.0.0.1:${port}`);
    expect(r.out).toContain("allowed-ok");
    expect(allowedHits).toBe(1);
    // allowed requests are audited in batches: wait for the flush
    let audited = false;
    for (let i = 0; i < 40 && !audited; i++) {
      audited = d.store.listAudit({ sandboxId: sb.id }).some((e) => e.kind === "egress" && e.action !== "denied");
      if (!audited) await Bun.sleep(100);
    }
    expect(audited).toBe(true);
  });

  test("a site that is not allowlisted gets sbx's 403 and is never contacted", async () => {
    const r = await d.asGuest(sb, `curl -sS -m 5 -i http://127.0.0.6:${denied.port}/`);
    expect(r.out).toMatch(/^HTTP\/1\.1 403/);
    expect(r.out.toLowerCase()).toContain("x-sbx-blocked");
    expect(deniedHits).toBe(0);
    expect(d.store.listApprovals({ sandboxId: sb.id }).map((a) => a.host)).toContain("127.0.0.6");
  });

  test("direct TCP to a host in the test's network namespace fails at once; proxy bypass (--noproxy) too", async () => {
    const r = await d.asGuest(sb, `exec 3<>/dev/tcp/${target}/8080 && echo connected`);
    expect(r.out).not.toContain("connected");
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBe(124); // rejected, not hanging
    const c = await d.asGuest(sb, `curl -sS -m 3 --noproxy '*' http://127.0.0.5:${allowed.port}/ && echo through`);
    expect(c.out).not.toContain("through");
    expect(allowedHits).toBe(1);
    // control: root reaches it
    expect(sh(["timeout", "5", "bash", "-c", `exec 3<>/dev/tcp/${target}/8080; read -r l <&3; echo $l`]).out.trim()).toBe("hi");
  });

  test("DNS (UDP and TCP 53) to the namespace host gets nowhere", async () => {
    await Bun.sleep(300); // the control connection's line lands first
    nsOut = "ready\n";
    await d.asGuest(sb, `printf 'q' > /dev/udp/${target}/53; exec 3<>/dev/tcp/${target}/53`);
    await Bun.sleep(300);
    expect(nsOut).not.toContain("udp");
    expect(nsOut).not.toContain("tcp");
  });

  test("the blocked attempt is in the audit log (what `sbx logs` reads) as this sandbox's blocked-raw egress", async () => {
    await d.asGuest(sb, `exec 3<>/dev/tcp/${target}/8080`);
    let found: unknown[] = [];
    for (let i = 0; i < 30 && found.length === 0; i++) {
      await d.kernelLog.poll();
      found = d.store.listAudit({ sandboxId: sb.id }).filter((e) => e.action === "blocked-raw" && (e.detail as { dst?: string }).dst === target);
      if (found.length === 0) await Bun.sleep(100);
    }
    expect(found.length).toBeGreaterThan(0);
    expect(found[0]).toMatchObject({ kind: "egress", action: "blocked-raw", detail: { dst: target, dport: 8080, proto: "tcp" } });
    // attributed to this sandbox only
    expect(d.store.listAudit({ sandboxId: other.id }).some((e) => e.action === "blocked-raw" && (e.detail as { dst?: string }).dst === target)).toBe(false);
  });

  test("another guest cannot use this guest's port (nft drops it), only its own", async () => {
    const theirs = await d.asGuest(other, `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`);
    expect(theirs.out).not.toContain("connected");
    const own = await d.asGuest(other, `exec 3<>/dev/tcp/127.0.0.1/${otherPort} && echo connected`);
    expect(own.out).toContain("connected");
  });

  test("stop: block-all and the port's guard is down; start again: through again", async () => {
    await d.users.stop("egress", { cwd: w.repo });
    expect((await d.asGuest(sb, `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`)).out).not.toContain("connected");
    await d.users.start("egress", { repo: sb.repo });
    expect((await d.asGuest(sb, `curl -sS -m 5 http://127.0.0.5:${allowed.port}/`)).out).toContain("allowed-ok");
    expect(await proxyAcceptsOnPort(sb)).toContain("the proxy accepts on it");
  });

  test("daemon restart after a flushed ruleset: rules come back block-all before guards, then run mode (fail closed)", async () => {
    must(["nft", "delete", "table", "inet", w.table]);
    // With no table the guest would be unfiltered: the daemon's first step (the service's fence) restores it before anything else.
    await d.users.fence();
    expect((await d.asGuest(sb, `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`)).out).not.toContain("connected");
    expect((await d.asGuest(sb, `exec 3<>/dev/tcp/${target}/8080 && echo connected`)).out).not.toContain("connected");
    const report = await d.users.reconcile();
    expect(report.guarded).toContain("egress");
    expect((await d.asGuest(sb, `curl -sS -m 5 http://127.0.0.5:${allowed.port}/`)).out).toContain("allowed-ok");
  });

  test("a crash midway (row deleted, backend not yet removed) is cleaned by prune", async () => {
    const crash = (await d.users.create({ name: "crash", cwd: w.repo })).sandbox;
    const guest = d.backend.guest(d.spec(crash));
    await d.guards.release(crash);
    d.store.setSandboxState(crash.id, "deleted"); // the process died right after this
    expect(sh(["getent", "passwd", guest]).code).toBe(0);
    const r = await d.users.prune();
    expect(r.removed.some((l) => l.includes(guest))).toBe(true);
    expect(sh(["getent", "passwd", guest]).code).not.toBe(0);
    expect(sh(["nft", "list", "chain", "inet", w.table, `sb_${d.spec(crash).id}`]).code).not.toBe(0);
    // the live ones were kept
    expect(sh(["getent", "passwd", d.backend.guest(d.spec(sb))]).code).toBe(0);
  });
});
