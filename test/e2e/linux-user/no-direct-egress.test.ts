// Invariant no-direct-egress (linux-user): as the guest, TCP/UDP/DNS anywhere but 127.0.0.1:<proxyPort> fails, and is logged.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, type ChildProcess } from "node:child_process";
import type { SandboxSpec } from "../../../src/core/spec";
import { KernelLogMonitor } from "../../../src/drivers/linux-user/monitor";
import { createExec } from "../../../src/sys/exec";
import { makeNetns, makeWorld, must, sh, whyNot, type World } from "./harness";

const skip = whyNot();

/** A TCP listener on 8080 and a UDP one on 53 inside the test's own network namespace; prints what reaches it. */
const NS_SERVER = `
const seen = (what) => process.stdout.write(what + "\\n");
Bun.listen({ hostname: "0.0.0.0", port: 8080, socket: { open(s) { seen("tcp"); s.end("hi\\n"); }, data() {} } });
await Bun.udpSocket({ hostname: "0.0.0.0", port: 53, socket: { data() { seen("udp"); } } });
seen("ready");
`;

describe.skipIf(skip !== undefined)(`no-direct-egress: linux-user guest${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let spec: SandboxSpec;
  let port: number;
  let uid: number;
  const ns = `sbxe2e${process.pid % 100000}`;
  const vethHost = `vsx${process.pid % 100000}a`;
  const vethNs = `vsx${process.pid % 100000}b`;
  const net = `10.231.${process.pid % 250}`;
  const target = `${net}.2`;
  let nsServer: ChildProcess;
  let nsOut = "";
  let proxy: Bun.TCPSocketListener<undefined>;
  let other: Bun.TCPSocketListener<undefined>;
  let proxyHits = 0;
  const monitor = new KernelLogMonitor(createExec(process.env as Record<string, string>));

  /** Runs a bash snippet as the guest through the backend's own shellArgv (not under a PTY: no tty needed). */
  // Async: the test's own loopback listeners must keep serving while the guest runs.
  const asGuest = async (script: string) => {
    const argv = w.backend.shellArgv(spec, { argv: ["timeout", "5", "bash", "-c", script], cwd: w.repo, tty: false, env: {} });
    const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, out, err };
  };

  beforeAll(async () => {
    w = await makeWorld();
    proxy = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open(s) {
          proxyHits++;
          s.end("proxy-ok\n");
        },
        data() {},
      },
    });
    other = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { open: (s) => void s.end("other\n"), data() {} } });
    port = proxy.port;
    spec = w.spec("egress", port);
    await w.backend.apply(spec);
    uid = Number(must(["id", "-u", w.backend.guest(spec)]).trim());

    makeNetns({ ns, vethHost, vethNs, net });
    nsServer = spawn("ip", ["netns", "exec", ns, process.execPath, "-e", NS_SERVER], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve) => {
      nsServer.stdout!.on("data", (d: Buffer) => {
        nsOut += d.toString();
        if (nsOut.includes("ready")) resolve();
      });
    });
    await monitor.skipExisting();
  });

  afterAll(async () => {
    nsServer?.kill("SIGKILL");
    sh(["ip", "link", "del", vethHost]);
    sh(["ip", "netns", "del", ns]);
    proxy?.stop(true);
    other?.stop(true);
    await w?.teardown();
  });

  test("control: root (not the guest) reaches the namespace's TCP and UDP listeners", async () => {
    const r = sh(["timeout", "5", "bash", "-c", `exec 3<>/dev/tcp/${target}/8080; read -r l <&3; echo $l; echo q > /dev/udp/${target}/53`]);
    expect(r.out.trim()).toBe("hi");
    await Bun.sleep(200);
    expect(nsOut).toContain("tcp");
    expect(nsOut).toContain("udp");
    nsOut = "ready\n";
  });

  test("the guest's TCP to the namespace host fails at once", async () => {
    const r = await asGuest(`exec 3<>/dev/tcp/${target}/8080 && echo connected`);
    expect(r.out).not.toContain("connected");
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBe(124); // rejected, not a hang until timeout
  });

  test("the guest's DNS (UDP and TCP port 53) to the namespace host gets nowhere", async () => {
    await asGuest(`printf 'q' > /dev/udp/${target}/53; exec 3<>/dev/tcp/${target}/53`);
    await Bun.sleep(300);
    expect(nsOut).not.toContain("udp");
    expect(nsOut).not.toContain("tcp");
  });

  test("the guest reaches 127.0.0.1 on its proxy port", async () => {
    const before = proxyHits;
    const r = await asGuest(`exec 3<>/dev/tcp/127.0.0.1/${port}; read -r l <&3; echo "$l"`);
    expect(r.out.trim()).toBe("proxy-ok");
    expect(proxyHits).toBe(before + 1);
  });

  test("the guest cannot reach other loopback ports or ::1", async () => {
    expect((await asGuest(`exec 3<>/dev/tcp/127.0.0.1/${other.port} && echo connected`)).out).not.toContain("connected");
    expect((await asGuest(`exec 3<>/dev/tcp/::1/${port} && echo connected`)).out).not.toContain("connected");
    // control: root gets through to the same other port
    const ctl = Bun.spawn(["timeout", "5", "bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/${other.port}; read -r l <&3; echo $l`], { stdout: "pipe" });
    expect((await new Response(ctl.stdout).text()).trim()).toBe("other");
  });

  test("stopped: even the proxy port is blocked", async () => {
    await w.backend.stop(spec);
    expect((await asGuest(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`)).out).not.toContain("connected");
    await w.backend.apply(spec);
    expect((await asGuest(`exec 3<>/dev/tcp/127.0.0.1/${port}; read -r l <&3; echo "$l"`)).out.trim()).toBe("proxy-ok");
  });

  test("blocked attempts are in the kernel log with sbx's prefix and parse into events", async () => {
    await monitor.skipExisting();
    await asGuest(`exec 3<>/dev/tcp/${target}/8080`);
    let events: Awaited<ReturnType<typeof monitor.poll>> = [];
    for (let i = 0; i < 20 && events.length === 0; i++) {
      await Bun.sleep(100);
      events = (await monitor.poll()).filter((e) => e.uid === uid && e.dst === target);
    }
    expect(events.length).toBeGreaterThan(0);
    expect(events[0]).toMatchObject({ uid, proto: "tcp", dst: target, dport: 8080, family: "ipv4" });
  });
});
