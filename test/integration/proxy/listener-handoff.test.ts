// The forwarder's listener handed to the proxy over listen.sock (SCM_RIGHTS), on real sockets: one relay, fallback, fail closed, and what is refused.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, openSync, statSync } from "node:fs";
import { join } from "node:path";
import { fdPassing, loopbackListener, type FdPassing } from "../../../shims/fd-pass";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { serveListenerHandoff, type HandoffServer } from "../../../src/proxy/listener-handoff";
import { echoServer, echoThrough, openFds, openTunnel, tempDir } from "./helpers";

const FORWARDER = join(import.meta.dir, "../../../shims/forwarder.ts");
const lib = fdPassing();
const why = lib ? "" : ` (skipped: no fd passing on ${process.platform}/${process.arch})`;

let tmp: ReturnType<typeof tempDir>;
let echo: Awaited<ReturnType<typeof echoServer>>;
let proxy: EgressProxy | null = null;
let handoff: HandoffServer | null = null;
let socketPath: string;
let listenPath: string;
const warnings: string[] = [];

const startProxy = () =>
  startEgressProxy({ socketPath, sandbox: { id: 1, name: "demo" }, policy: () => ({ sandbox: [], global: [], published: [`127.0.0.1:${echo.port}`] }) });
const serve = (p: EgressProxy, l: FdPassing) =>
  serveListenerHandoff({ lib: l, path: listenPath, adopt: (fd) => p.serveListener(fd), log: { warn: (msg, f) => void warnings.push(`${msg} ${JSON.stringify(f)}`) } });

async function until(pred: () => boolean, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) return false;
    await Bun.sleep(20);
  }
  return true;
}

/** A CONNECT through 127.0.0.1:port to the echo server: the echoed payload, or the error. */
async function through(port: number): Promise<string> {
  try {
    const t = await openTunnel({ port }, `127.0.0.1:${echo.port}`);
    if (t.status !== 200) return `status ${t.status}`;
    return (await echoThrough(t, "ping")).toString();
  } catch (e) {
    return `error ${(e as Error).message}`;
  }
}

/** Connects to listen.sock and sends these descriptors (none: just a byte); the daemon's one-line answer. */
async function handOver(fds: number[]): Promise<string> {
  let answer = "";
  await new Promise<void>((resolve) => {
    Bun.connect({
      unix: listenPath,
      socket: {
        open(s) {
          const fd = (s as unknown as { fd: number }).fd;
          if (fds.length === 0) s.write("L");
          else lib!.sendFds(fd, fds);
        },
        data(_s, d) {
          answer += Buffer.from(d).toString();
        },
        close: () => resolve(),
        error: () => resolve(),
      },
    }).catch(() => resolve());
  });
  return answer.trim();
}

type Forwarder = ReturnType<typeof Bun.spawn>;

/** Runs fn with a real forwarder process (shims/forwarder.ts, port 0) and the port it listens on; kills it after. */
async function withForwarder(fn: (fw: Forwarder, port: number) => Promise<void>): Promise<void> {
  const fw = Bun.spawn(["bun", FORWARDER, "--port", "0"], { env: { PATH: process.env.PATH ?? "", SBX_PROXY_SOCKET: socketPath }, stdout: "pipe", stderr: "pipe" });
  try {
    const { value } = await (fw.stdout as ReadableStream<Uint8Array>).getReader().read();
    await fn(fw, Number(/127\.0\.0\.1:(\d+)/.exec(new TextDecoder().decode(value))?.[1]));
  } finally {
    fw.kill();
    await fw.exited;
  }
}

/** `through` with the forwarder stopped (SIGSTOP): only a proxy accepting on the listener itself can answer. */
async function throughFrozen(fw: Forwarder, port: number): Promise<string> {
  process.kill(fw.pid, "SIGSTOP");
  try {
    return await through(port);
  } finally {
    process.kill(fw.pid, "SIGCONT");
  }
}

describe.skipIf(!lib)(`listener handoff${why}`, () => {
  beforeAll(async () => {
    tmp = tempDir();
    socketPath = join(tmp.dir, "sb", "proxy.sock");
    listenPath = join(tmp.dir, "sb", "listen.sock");
    echo = await echoServer();
  });
  afterEach(async () => {
    handoff?.close();
    handoff = null;
    await proxy?.close();
    proxy = null;
  });
  afterAll(async () => {
    await echo.close();
    tmp.cleanup();
  });

  test("the proxy accepts on the forwarder's listener: traffic flows with the forwarder frozen (SIGSTOP)", async () => {
    proxy = await startProxy();
    handoff = serve(proxy, lib!);
    // Only its owner may connect (a linux-user guest, another user, never can).
    expect(statSync(listenPath).mode & 0o777).toBe(0o600);
    await withForwarder(async (fw, port) => {
      expect(await until(() => handoff!.held())).toBe(true);
      expect(await throughFrozen(fw, port)).toBe("pingbye 4");
    });
  });

  test("the handoff ends: the forwarder relays again (and fails closed without a proxy); a new handoff takes over", async () => {
    proxy = await startProxy();
    handoff = serve(proxy, lib!);
    await withForwarder(async (fw, port) => {
      expect(await until(() => handoff!.held())).toBe(true);
      // Handoff gone, proxy still up: the relay carries the connection over proxy.sock (a connection made before
      // the relay is back waits in the listener's backlog).
      handoff!.close();
      handoff = null;
      expect(await through(port)).toBe("pingbye 4");
      // The proxy gone too: nothing answers, and nothing gets out.
      await proxy!.close();
      proxy = null;
      expect(await through(port)).not.toContain("pingbye");
      // Daemon back: the forwarder (retrying) hands the same listener over again.
      proxy = await startProxy();
      handoff = serve(proxy, lib!);
      expect(await until(() => handoff!.held())).toBe(true);
      expect(await throughFrozen(fw, port)).toBe("pingbye 4");
    });
  }, 20_000);

  test("refused, closed, and nothing adopted: no descriptor, a file, a unix socket, a connected TCP socket, two at once", async () => {
    proxy = await startProxy();
    handoff = serve(proxy, lib!);
    await Bun.sleep(50); // the last test's sockets finish closing first
    const before = openFds();
    const file = openSync(import.meta.path, "r");
    const tcp = await Bun.connect({ hostname: "127.0.0.1", port: echo.port, socket: { data() {} } });
    const tcpFd = (tcp as unknown as { fd: number }).fd;
    const unixListener = Bun.listen({ unix: join(tmp.dir, "other.sock"), socket: { data() {} } });
    const good = lib!.listenLoopback(0);
    const other = lib!.listenLoopback(0);
    try {
      expect(await handOver([])).toBe("refused no descriptor was sent");
      expect(await handOver([file])).toMatch(/^refused fd \d+ is not a socket: Socket operation on non-socket/);
      expect(await handOver([tcpFd])).toBe("refused not a listening socket");
      // The handoff socket's own peer end, a unix socket: the daemon may only take TCP.
      const unixAnswer = await new Promise<string>((resolve) => {
        let a = "";
        Bun.connect({
          unix: listenPath,
          socket: {
            open(s) {
              const fd = (s as unknown as { fd: number }).fd;
              lib!.sendFd(fd, fd);
            },
            data: (_s, d) => void (a += Buffer.from(d).toString()),
            close: () => resolve(a.trim()),
            error: () => resolve(a.trim()),
          },
        });
      });
      expect(unixAnswer).toBe("refused a unix socket, not TCP");
      // Two fit the one-descriptor buffer's padding; three overflow it (MSG_CTRUNC). Either way all are closed.
      expect(await handOver([good.fd, other.fd])).toBe("refused more than one descriptor");
      expect(await handOver([good.fd, other.fd, file])).toBe("refused more than one descriptor");
      expect(handoff.held()).toBe(false);
      expect(warnings.length).toBeGreaterThanOrEqual(3);
    } finally {
      closeSync(file);
      tcp.end();
      unixListener.stop(true);
      lib!.close(good.fd);
      lib!.close(other.fd);
    }
    await Bun.sleep(50);
    // Every descriptor that arrived was closed (a leak here is two or three at once; fewer can mean others closed).
    expect(openFds()).toBeLessThanOrEqual(before);
  });

  test("slots: two are held at once (the proxy's and a transparent one); a new handoff to a slot replaces that slot's listener only", async () => {
    proxy = await startProxy();
    const p = proxy;
    // As the proxy guard's: a slot per port here (the guard's are the proxy's and one per transparent port).
    handoff = serveListenerHandoff({ lib: lib!, path: listenPath, adopt: (fd) => p.serveListener(fd), slot: (i) => (i.port % 2 === 0 ? "even" : "odd"), log: { warn: () => {} } });
    const ls = [lib!.listenLoopback(0), lib!.listenLoopback(0), lib!.listenLoopback(0), lib!.listenLoopback(0)];
    const even = ls.filter((l) => l.port % 2 === 0);
    const odd = ls.filter((l) => l.port % 2 === 1);
    try {
      if (even.length < 2 && odd.length < 2) return console.warn("skipped: the kernel gave ports of one parity only");
      const [same1, same2] = even.length >= 2 ? even : odd;
      const other = (even.length >= 2 ? odd : even)[0];
      expect(await Promise.race([handOver([same1!.fd]), Bun.sleep(300).then(() => "held open")])).toBe("held open");
      if (other) expect(await Promise.race([handOver([other.fd]), Bun.sleep(300).then(() => "held open")])).toBe("held open");
      expect(await through(same1!.port)).toBe("pingbye 4");
      if (other) expect(await through(other.port)).toBe("pingbye 4");
      expect(await Promise.race([handOver([same2!.fd]), Bun.sleep(300).then(() => "held open")])).toBe("held open");
      expect(await through(same2!.port)).toBe("pingbye 4");
      expect(await Promise.race([through(same1!.port), Bun.sleep(500).then(() => "nobody accepts")])).toBe("nobody accepts");
      if (other) expect(await through(other.port)).toBe("pingbye 4");
    } finally {
      for (const l of ls) lib!.close(l.fd);
    }
  });

  test("a second handoff replaces the first: one listener per sandbox", async () => {
    proxy = await startProxy();
    handoff = serve(proxy, lib!);
    const a = lib!.listenLoopback(0);
    const b = lib!.listenLoopback(0);
    try {
      expect(await Promise.race([handOver([a.fd]), Bun.sleep(300).then(() => "held open")])).toBe("held open");
      expect(handoff.held()).toBe(true);
      expect(await through(a.port)).toBe("pingbye 4");
      expect(await Promise.race([handOver([b.fd]), Bun.sleep(300).then(() => "held open")])).toBe("held open");
      expect(await through(b.port)).toBe("pingbye 4");
      // a's adopted copy is closed; only this test's own copy keeps a listening, and nothing accepts on it.
      const r = await Promise.race([through(a.port), Bun.sleep(500).then(() => "nobody accepts")]);
      expect(r).toBe("nobody accepts");
    } finally {
      lib!.close(a.fd);
      lib!.close(b.fd);
    }
  });
});

describe("which descriptors may be handed over", () => {
  const base = { family: "inet" as const, stream: true, listening: true, address: "127.0.0.1", port: 3128 };
  test.each([
    [base, null],
    [{ ...base, address: "127.1.2.3" }, null],
    [{ ...base, family: "inet6" as const, address: "0:0:0:0:0:0:0:1" }, null],
    [{ ...base, address: "0.0.0.0" }, "bound to 0.0.0.0, not loopback"],
    [{ ...base, address: "10.0.0.5" }, "bound to 10.0.0.5, not loopback"],
    [{ ...base, family: "inet6" as const, address: "0:0:0:0:0:0:0:0" }, "bound to 0:0:0:0:0:0:0:0, not loopback"],
    [{ ...base, family: "unix" as const }, "a unix socket, not TCP"],
    [{ ...base, stream: false }, "not a stream socket"],
    [{ ...base, listening: false }, "not a listening socket"],
    [{ error: "fd 9 is not a socket" }, "fd 9 is not a socket"],
  ])("%j → %p", (info, expected) => {
    expect(loopbackListener(info)).toBe(expected);
  });
});
