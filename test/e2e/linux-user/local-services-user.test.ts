// local-services (issue 24): a user-account guest reaches a server of its own on its loopback (`npm run dev` then
// `curl localhost:3000`), over IPv4 and IPv6, while your services and another guest's stay refused on the same
// loopback. The rule is on the socket's owner (its cgroup), not on the port. Real root, real nftables, two real guests.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SandboxSpec } from "../../../src/core/spec";
import { makeWorld, sh, whyNot, type World } from "./harness";

const MIB = 1024 * 1024;
const skip = whyNot();
const v6 = sh(["sh", "-c", "grep -q '^0\\{31\\}1 ' /proc/net/if_inet6 2>/dev/null"]).code === 0; // (a /proc file's size is 0: test -s would always say no)

describe.skipIf(skip !== undefined)(`local-services: linux-user guests${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let a: SandboxSpec;
  let b: SandboxSpec;
  let hostSrv: ReturnType<typeof Bun.spawn> | undefined;
  let hostPort = 0;
  let noV2: string | undefined;
  const run = (spec: SandboxSpec, script: string) => sh(w.backend.shellArgv(spec, { argv: ["bash", "-c", script], cwd: w.repo, tty: false, env: {} }));
  /** A connect from inside: prints ok or the error (python: no curl dependency). */
  const connect = (spec: SandboxSpec, host: string, port: number) =>
    run(spec, `python3 -c "import socket; s=socket.create_connection(('${host}', ${port}), timeout=3); s.sendall(b'ping'); print('ok', s.recv(16).decode())" 2>&1 | tail -1`).out.trim();
  /** A server of the guest's own, left running (setsid: it outlives the command that started it), answering "mine". */
  const serve = (spec: SandboxSpec, host: string, port: number) => {
    const r = run(spec, `setsid -f python3 -c "import socket; s=socket.socket(socket.AF_INET6 if ':' in '${host}' else socket.AF_INET); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('${host}', ${port})); s.listen()
while True:
  c,_=s.accept(); c.recv(16); c.sendall(b'mine'); c.close()" >/dev/null 2>&1 </dev/null; sleep 0.5`);
    expect(r.code).toBe(0);
  };
  const limits = { memory: 512 * MIB, cpus: 1, pids: 256 };

  beforeAll(async () => {
    w = await makeWorld();
    if (w.backend.cgroups.socketCgroup("probe") === null) noV2 = "no cgroup v2 hierarchy here (sockets cannot be told apart by owner)";
    a = { ...w.spec("svc-a"), limits };
    b = { ...w.spec("svc-b"), limits };
    await w.backend.apply(a);
    await w.backend.apply(b);
    // A service of yours on the same loopback (the host user's dev database, say), in a process of its own.
    hostSrv = Bun.spawn(
      ["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--clear-groups", "--", "/usr/bin/python3", "-u", "-c", "import socket; s=socket.socket(); s.bind(('127.0.0.2', 0)); s.listen(); print(s.getsockname()[1])\nwhile True:\n  c,_=s.accept(); c.recv(16); c.sendall(b'host'); c.close()"],
      { stdout: "pipe", stderr: "inherit" },
    );
    const reader = (hostSrv.stdout as ReadableStream<Uint8Array>).getReader();
    hostPort = Number(new TextDecoder().decode((await reader.read()).value).trim());
    reader.releaseLock();
    if (!(hostPort > 0)) throw new Error("the host's service did not start");
  }, 60_000);
  afterAll(async () => {
    hostSrv?.kill();
    await w?.teardown();
  }, 60_000);

  test("a guest reaches its own server on 127.0.0.1 (and ::1 where the machine has it)", () => {
    if (noV2) return console.warn(`skipped: ${noV2}`);
    serve(a, "127.0.0.1", 43901);
    expect(connect(a, "127.0.0.1", 43901)).toBe("ok mine");
    if (!v6) return console.warn("skipped the ::1 half: this machine has no IPv6 loopback");
    serve(a, "::1", 43902);
    expect(connect(a, "::1", 43902)).toBe("ok mine");
  });

  test("your service on the same loopback stays refused, on the very port the guest's own server uses (the control: you reach it)", () => {
    if (noV2) return console.warn(`skipped: ${noV2}`);
    // Yours on 127.0.0.2:P, the guest's own on 127.0.0.1:P: the port decides nothing, the socket's owner does.
    serve(a, "127.0.0.1", hostPort);
    expect(connect(a, "127.0.0.1", hostPort)).toBe("ok mine");
    const got = connect(a, "127.0.0.2", hostPort);
    expect(got).not.toContain("ok");
    expect(got).toMatch(/Connection refused|reset|Errno/);
    expect(sh(["python3", "-c", `import socket; s=socket.create_connection(('127.0.0.2', ${hostPort}), timeout=3); s.sendall(b'x'); print(s.recv(16).decode())`]).out.trim()).toBe("host");
  });

  test("another guest's server stays refused, on the same port it would use itself", () => {
    if (noV2) return console.warn(`skipped: ${noV2}`);
    expect(connect(b, "127.0.0.1", 43901)).not.toContain("ok");
    // b's own server on another port works for b, and is refused to a.
    serve(b, "127.0.0.1", 43903);
    expect(connect(b, "127.0.0.1", 43903)).toBe("ok mine");
    expect(connect(a, "127.0.0.1", 43903)).not.toContain("ok");
  });

  test("the same over ::1: your service and another guest's stay refused (the control: you, and that guest, reach them)", () => {
    if (noV2) return console.warn(`skipped: ${noV2}`);
    if (!v6) return console.warn("skipped: this machine has no IPv6 loopback");
    // Yours on ::1 (the host user's), in a process of its own.
    const pidFile = `/tmp/sbx-svc6-${w.tag}.pid`;
    const mine = Bun.spawnSync(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--clear-groups", "--", "sh", "-c", `setsid -f /usr/bin/python3 -c "import os, socket; open('${pidFile}', 'w').write(str(os.getpid())); s=socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('::1', 43904)); s.listen()
while True:
  c,_=s.accept(); c.recv(16); c.sendall(b'host'); c.close()" >/dev/null 2>&1 </dev/null; sleep 0.5`]);
    expect(mine.exitCode).toBe(0);
    try {
      expect(connect(a, "::1", 43904)).not.toContain("ok");
      expect(sh(["python3", "-c", "import socket; s=socket.create_connection(('::1', 43904), timeout=3); s.sendall(b'x'); print(s.recv(16).decode())"]).out.trim()).toBe("host");
      serve(b, "::1", 43905);
      expect(connect(b, "::1", 43905)).toBe("ok mine");
      expect(connect(a, "::1", 43905)).not.toContain("ok");
    } finally {
      // By its pid, as it wrote it.
      const pid = Number(sh(["cat", pidFile]).out.trim());
      if (pid > 1) process.kill(pid, "SIGKILL");
      sh(["rm", "-f", pidFile]);
    }
  });
});
