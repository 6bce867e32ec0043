// The daemon's pflog0 audit on a fake Mac: a blocked packet of a sandbox's anchor becomes that sandbox's audit row and a feed event; unknown anchors are ignored; a dead tcpdump is restarted with backoff; stop kills it by pid.
import { describe, expect, test } from "bun:test";
import { MacosBackend } from "../../../../src/drivers/macos/backend";
import { monitorCommand } from "../../../../src/drivers/macos/monitor";
import { silentLogger } from "../../../../src/sys/log";
import { startPflogAudit, type LineChild, type SpawnLines } from "../../../../src/drivers/macos/pflog-audit";
import type { UserIdentity } from "../../../../src/drivers/user-account";
import { Store } from "../../../../src/store/store";
import type { Paths } from "../../../../src/sys/paths";
import { FakeExec } from "../../../fakes/exec";

const paths = { runtimeDir: "/tmp/sbx-501", sandboxRoot: "/Users/alice/.cache/sandbox" } as Paths;
const identity = (id: string, port: number): UserIdentity => ({
  kind: "user",
  id,
  dir: `/Users/alice/.cache/sandbox/demo-x/${id}`,
  proxyPort: port,
  hostUser: { name: "alice", uid: 501, gid: 20, home: "/Users/alice", shell: "/bin/zsh" },
});
const line = (uid: number, dst: string, port: number) =>
  `00:00:00.000000 rule 1.sbx_${uid}.1/0(match) [uid ${uid}]: block out on en0: 192.168.1.20.52144 > ${dst}.${port}: Flags [S], seq 1, win 65535, length 0`;
const DSCL = ["/usr/bin/dscl", ".", "-list", "/Users", "UniqueID"];
const USERS = "root 0\nalice 501\nsbx_alice_0a1b2c3d4e5f 7001\nsbx_alice_99aa88bb77cc 7002\nsbx_bob_0a1b2c3d4e5f 7003\n";

interface FakeChild extends LineChild {
  argv: readonly string[];
  emit(line: string): void;
  die(code: number): void;
  signals: string[];
}

function spawner() {
  const children: FakeChild[] = [];
  const spawn: SpawnLines = (argv, onLine) => {
    let end!: (code: number) => void;
    const exited = new Promise<number>((r) => (end = r));
    const c: FakeChild = {
      argv,
      pid: 4100 + children.length,
      exited,
      signals: [],
      emit: onLine,
      die: (code) => end(code),
      kill(sig) {
        c.signals.push(sig ?? "SIGTERM");
        end(143);
      },
    };
    children.push(c);
    return c;
  };
  return { spawn, children };
}

// A bound on a hang, not a speed: 10 s (a loaded machine is not a failure).
async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error("condition not met in time");
    await Bun.sleep(2);
  }
}

function setup() {
  const exec = new FakeExec();
  const backend = new MacosBackend({
    exec,
    root: { run: async () => { throw new Error("no root work in the monitor"); } },
    hostUser: "alice",
    runtimeDir: "/tmp/sbx-501",
    runtime: "/usr/local/libexec/sbx/bun",
    shimDir: "/usr/local/libexec/sbx/shims",
  });
  const store = new Store(":memory:");
  const demo = store.createSandbox({ name: "demo", repo: "/Users/alice/src/demo", backend: "macos", identity: identity("0a1b2c3d4e5f", 17001) });
  // a Docker row with the same spec id must never receive a macOS guest's packets
  store.createSandbox({ name: "other", repo: "/Users/alice/src/other", backend: "docker", identity: { kind: "docker", id: "99aa88bb77cc" } as never });
  return { exec, backend, store, demo };
}

describe("startPflogAudit", () => {
  test("a blocked packet of anchor sbx_<uid> becomes an egress/blocked-raw audit row of that uid's sandbox, and an event", async () => {
    const { exec, backend, store, demo } = setup();
    exec.expect(DSCL, { stdout: USERS });
    const { spawn, children } = spawner();
    const events: [number, string, number][] = [];
    const audit = startPflogAudit({ backend, spawn, store, paths, log: silentLogger, onEvent: (sid, e, id) => events.push([sid, e.dst, id]) });
    expect(children).toHaveLength(1);
    expect(children[0]!.argv).toEqual(monitorCommand());
    children[0]!.emit("tcpdump: verbose output suppressed, use -v[v]... for full protocol decode");
    children[0]!.emit(line(7001, "93.184.216.34", 443));
    children[0]!.emit(line(7001, "93.184.216.34", 443)); // SYN retry: deduplicated
    await audit.idle();
    const rows = store.listAudit({ sandboxId: demo.id });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      kind: "egress",
      action: "blocked-raw",
      detail: { uid: 7001, proto: "tcp", family: "ipv4", dst: "93.184.216.34", dport: 443, src: "192.168.1.20", out: "en0", summary: "tcp 93.184.216.34:443" },
    });
    expect(events).toEqual([[demo.id, "93.184.216.34", rows[0]!.id]]);
    await audit.stop();
    exec.assertDone();
  });

  test("unknown anchors are ignored: another host user's guest, a uid whose sandbox is not a macOS row, an account-less uid; lookups are rate-limited", async () => {
    const { exec, backend, store } = setup();
    exec.expect(DSCL, { stdout: USERS }, 3);
    const { spawn, children } = spawner();
    let t = 0;
    const audit = startPflogAudit({ backend, spawn, store, paths, log: silentLogger, now: () => t, dedupeMs: 0 });
    for (const uid of [7003, 7002, 7444]) children[0]!.emit(line(uid, "1.1.1.1", 53));
    t = 1000;
    children[0]!.emit(line(7444, "8.8.8.8", 53)); // looked up a second ago: not again
    await audit.idle();
    expect(store.listAudit({})).toHaveLength(0);
    expect(exec.calls).toHaveLength(3); // one dscl -list per unknown uid, none for the repeat within 30 s
    await audit.stop();
    exec.assertDone();
  });

  test("a tcpdump that dies is restarted with a growing delay; stop kills the running one by pid and starts no other", async () => {
    const { exec, backend, store, demo } = setup();
    exec.always(DSCL, { stdout: USERS });
    const { spawn, children } = spawner();
    const audit = startPflogAudit({ backend, spawn, store, paths, log: silentLogger, backoff: { minMs: 5, maxMs: 40 } });
    expect(audit.pid()).toBe(4100);
    children[0]!.emit("sudo: a password is required");
    children[0]!.die(1);
    await until(() => children.length === 2);
    expect(audit.pid()).toBe(4101);
    children[1]!.die(1);
    await until(() => children.length === 3);
    expect(audit.starts()).toBe(3);
    // the restarted child still feeds the audit
    children[2]!.emit(line(7001, "10.0.0.1", 22));
    await audit.idle();
    expect(store.listAudit({ sandboxId: demo.id }).map((r) => r.detail.dst)).toEqual(["10.0.0.1"]);
    await audit.stop();
    expect(children[2]!.signals).toEqual(["SIGTERM"]);
    expect(audit.pid()).toBeNull();
    await Bun.sleep(60);
    expect(children).toHaveLength(3);
  });

  test("a child that ignores SIGTERM gets SIGKILL after the grace period", async () => {
    const { backend, store } = setup();
    const signals: string[] = [];
    let end!: (c: number) => void;
    const stubborn: SpawnLines = () => ({
      pid: 4200,
      exited: new Promise<number>((r) => (end = r)),
      kill: (sig) => {
        signals.push(sig ?? "SIGTERM");
        if (sig === "SIGKILL") end(137);
      },
    });
    const audit = startPflogAudit({ backend, spawn: stubborn, store, paths, log: silentLogger, killGraceMs: 10 });
    await audit.stop();
    expect(signals).toEqual(["SIGTERM", "SIGKILL"]);
  });

  test("a spawn that throws (no PTY, no sudo) is retried, not fatal", async () => {
    const { backend, store } = setup();
    let calls = 0;
    const { spawn: ok, children } = spawner();
    const flaky: SpawnLines = (argv, onLine) => {
      if (++calls === 1) throw new Error("posix_openpt failed");
      return ok(argv, onLine);
    };
    const audit = startPflogAudit({ backend, spawn: flaky, store, paths, log: silentLogger, backoff: { minMs: 5, maxMs: 5 } });
    await until(() => children.length === 1);
    await audit.stop();
  });
});
