// ports-held (linux-user), tried as a hostile guest would: while sandbox b is stopped, another sandbox's guest takes b's
// loopback proxy port (TCP) or its DNS stub's port (UDP, where b's name lookups are redirected). b's next start finds
// the squatter, ends it and takes the port back, saying whose it was; a port held by anything that is not a guest is
// not taken: the start is refused with who holds it and what to do.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Sandbox } from "../../../src/core/schemas";
import { makeDaemonWorld, type DaemonWorld } from "./daemon-world";
import { makeWorld, sh, whyNot, type World } from "./harness";

const skip = whyNot() ?? (sh(["which", "ss"]).code === 0 ? undefined : "needs ss");

/** The pids `ss` says hold the listening TCP port (or bound UDP port) on 127.0.0.1. */
function holders(proto: "tcp" | "udp", port: number): number[] {
  const out = sh(["ss", "-Hnp", proto === "tcp" ? "-lt" : "-lu", `sport = :${port}`]).out;
  return [...new Set([...out.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1])))];
}

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  for (const end = Date.now() + ms; !ok(); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

describe.skipIf(skip !== undefined)(`ports-held: a stopped sandbox's ports are taken back from squatters (linux-user)${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let d: DaemonWorld;
  let a: Sandbox;
  let b: Sandbox;
  let port = 0;
  const squat = (proto: "tcp" | "udp", p: number) =>
    proto === "tcp"
      ? `import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1",${p})); s.listen(); time.sleep(600)`
      : `import socket,time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",${p})); time.sleep(600)`;
  /** Starts a squatter in sandbox `row` that outlives the command (setsid), as a hostile agent's would. */
  const squatIn = async (row: Sandbox, proto: "tcp" | "udp", p: number) => {
    const r = await d.asGuest(row, `setsid python3 -c '${squat(proto, p)}' </dev/null >/dev/null 2>&1 & sleep 0.5; echo started`);
    expect(r.out).toContain("started");
  };

  beforeAll(async () => {
    w = await makeWorld();
    d = await makeDaemonWorld(w);
    a = (await d.users.create({ name: "squatter", cwd: w.repo })).sandbox;
    b = (await d.users.create({ name: "victim", cwd: w.repo })).sandbox;
    port = d.spec(b).options.driver === "user" ? (d.spec(b).options as { proxyPort: number }).proxyPort : 0;
    expect(port).toBeGreaterThan(0);
  }, 180_000);

  afterAll(async () => {
    for (const s of [a, b]) if (s) await d.users.rm(s.name, { cwd: w.repo, force: true }).catch((e) => console.error(e));
    await d?.close();
    await w?.teardown();
  }, 120_000);

  test("another sandbox's guest on b's proxy port (TCP) and DNS port (UDP): b's start ends it, takes both back and says whose it was", async () => {
    await d.users.stop("victim", { cwd: w.repo });
    await until("b's ports to be free", () => holders("tcp", port).length === 0 && holders("udp", port).length === 0);
    await squatIn(a, "tcp", port);
    await squatIn(a, "udp", port);
    await until("the squatter to hold both ports", () => holders("tcp", port).length > 0 && holders("udp", port).length > 0);
    const squatters = [...holders("tcp", port), ...holders("udp", port)];

    await d.users.start("victim", { cwd: w.repo });
    // The daemon (this process) holds both now; the squatter is gone.
    expect(holders("tcp", port)).toEqual([process.pid]);
    expect(holders("udp", port)).toEqual([process.pid]);
    // (A killed process stays a zombie until init reaps it: that counts as gone.)
    const gone = (pid: number) => !/^\d+ \(.*\) [^ZX]/.test(sh(["cat", `/proc/${pid}/stat`]).out);
    for (const pid of squatters) expect({ pid, gone: gone(pid) }).toEqual({ pid, gone: true });
    // Said where the person looks: the audit log names the port, the sandbox whose guest held it, and what sbx did.
    const rows = d.store.listAudit({ sandboxId: b.id });
    const said = JSON.stringify(rows.filter((r) => r.action === "port.reclaimed"));
    expect(said).toContain(`${port}`);
    expect(said).toContain("squatter");
    // b works: its guest reaches its proxy on the port it took back.
    const r = await d.asGuest(b, `curl -sS -m 5 -o /dev/null -w '%{http_code}' http://blocked.example/ 2>&1`);
    expect(r.out).toBe("403");
  }, 120_000);

  test("a squatter on b's DNS port alone reads none of the names b looks up", async () => {
    await d.users.stop("victim", { cwd: w.repo });
    await until("b's DNS port to be free", () => holders("udp", port).length === 0);
    // What it hears, written to a file of its own (read back as root).
    const home = d.backend.home(d.backend.guest(d.spec(a)));
    const listener = `import socket\ns=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",${port}))\nwhile True:\n  m=s.recv(4096); open("${home}/heard","ab").write(m)`;
    const r = await d.asGuest(a, `rm -f ~/heard; printf '%s' '${listener}' > ~/.l.py && setsid python3 ~/.l.py </dev/null >/dev/null 2>&1 & sleep 0.5; echo started`);
    expect(r.out).toContain("started");
    await until("the squatter to hold the DNS port", () => holders("udp", port).length > 0);
    await d.users.start("victim", { cwd: w.repo });
    await d.asGuest(b, "getent hosts private-name-of-b.example >/dev/null; true");
    const heard = sh(["cat", `${home}/heard`]).out;
    expect(heard).not.toContain("private-name-of-b");
    expect(holders("udp", port)).toEqual([process.pid]);
  }, 120_000);

  test("a guest that takes the port again the moment it is freed (a second process waiting to bind): every process of that guest is ended", async () => {
    await d.users.stop("victim", { cwd: w.repo });
    await until("b's port to be free", () => holders("tcp", port).length === 0);
    // The holder, and a waiter that tries every millisecond to bind the port itself.
    const waiter = `import socket,time\nwhile True:\n  s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n  try:\n    s.bind(("127.0.0.1",${port})); s.listen(); time.sleep(600)\n  except OSError:\n    s.close(); time.sleep(0.001)`;
    await squatIn(a, "tcp", port);
    const r = await d.asGuest(a, `printf '%s' '${waiter}' > ~/.w.py && setsid python3 ~/.w.py </dev/null >/dev/null 2>&1 & sleep 0.3; echo started`);
    expect(r.out).toContain("started");
    await until("the squatter to hold the port", () => holders("tcp", port).length > 0);
    const before = Math.max(0, ...d.store.listAudit({ sandboxId: b.id }).map((e) => e.id));

    await d.users.start("victim", { cwd: w.repo });
    expect(holders("tcp", port)).toEqual([process.pid]);
    const said = d.store.listAudit({ sandboxId: b.id, afterId: before }).filter((e) => e.action === "port.reclaimed");
    expect(JSON.stringify(said)).toContain('"everyProcess":true');
    expect(sh(["pgrep", "-u", String(Number(sh(["id", "-u", d.backend.guest(d.spec(a))]).out.trim())), "--runstates", "R,S,D,T,t,I"]).out.trim()).toBe("");
  }, 120_000);

  test("a port held by something that is not a guest (the person's own server) is not taken: the start says who holds it and what to do", async () => {
    await d.users.stop("victim", { cwd: w.repo });
    await until("b's port to be free", () => holders("tcp", port).length === 0);
    const own = Bun.spawn(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--init-groups", "--", "/usr/bin/python3", "-c", squat("tcp", port)], { stdout: "ignore", stderr: "ignore" });
    try {
      await until("the person's server to listen", () => holders("tcp", port).length > 0);
      const err = await d.users.start("victim", { cwd: w.repo }).then(() => null, (e: Error & { hint?: string }) => e);
      expect(err).not.toBeNull();
      expect(err!.message).toContain(`127.0.0.1:${port}`);
      expect(err!.message).toContain(w.host.name);
      expect(err!.message).toContain("python3");
      expect(`${err!.message} ${err!.hint}`).toMatch(/kill \d+|stop it/i);
      expect(own.exitCode).toBeNull(); // still running: not sbx's to end
    } finally {
      own.kill("SIGKILL");
      await own.exited;
    }
  }, 120_000);
});
