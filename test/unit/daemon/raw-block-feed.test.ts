// Blocked raw connections of both user-account kinds reach the live feed (dashboard) and the desktop notifier, deduplicated: their drivers' watchers audit them, the daemon's rawBlockFeed publishes them.
import { describe, expect, test } from "bun:test";
import type { LinuxUserBackend } from "../../../src/drivers/linux-user/backend";
import { MacosBackend } from "../../../src/drivers/macos/backend";
import { monitorCommand } from "../../../src/drivers/macos/monitor";
import { silentLogger } from "../../../src/sys/log";
import { productionComponents } from "../../../src/daemon/main";
import { blockedNotification, createDesktopNotifier } from "../../../src/daemon/notify";
import { rawBlockFeed } from "../../../src/events/raw-blocks";
import { startKernelLogAudit } from "../../../src/drivers/linux-user/kernel-log-audit";
import { auditOf } from "../../../src/drivers/linux-user/monitor";
import { SandboxService } from "../../../src/sandboxes/service";
import { Store } from "../../../src/store/store";
import { processEnv, type Env } from "../../../src/sys/env";
import type { Exec, TerminalOptions } from "../../../src/sys/exec";
import { createEventBus, feedFromAudit, type FeedEvent } from "../../../src/events/feed";
import type { Paths } from "../../../src/sys/paths";
import { FakeExec } from "../../fakes/exec";
import { ALICE_IDENTITY, ALICE_PATHS } from "../../fakes/mac";

const paths = ALICE_PATHS;
const identity = ALICE_IDENTITY;
const PFLOG = (dst: string) =>
  `00:00:00.000000 rule 1.sbx_7001.1/0(match) [uid 7001]: block out on en0: 192.168.1.20.52144 > ${dst}.443: Flags [S], seq 1, win 65535, length 0\r\n`;

// A bound on a hang, not a speed: 10 s (a loaded machine is not a failure).
async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error("condition not met in time");
    await Bun.sleep(2);
  }
}

/** FakeExec for run(), plus a terminal() that hands the test the child's onData and records kills. */
function macExec() {
  const fake = new FakeExec().always(["/usr/bin/dscl", ".", "-list", "/Users", "UniqueID"], { stdout: "alice 501\nsbx_alice_0a1b2c3d4e5f 7001\n" });
  const terms: { argv: readonly string[]; opts: TerminalOptions; kills: string[]; end: (c: number) => void }[] = [];
  const exec: Exec = {
    run: (argv, opts) => fake.run(argv, opts),
    terminal(argv, opts) {
      let end!: (c: number) => void;
      const exited = new Promise<number>((r) => (end = r));
      const t = { argv, opts, kills: [] as string[], end };
      terms.push(t);
      return {
        pid: 4300 + terms.length,
        exited,
        write: () => {},
        resize: () => {},
        kill: (sig) => {
          t.kills.push(sig ?? "SIGTERM");
          end(143);
        },
      };
    },
  };
  return { exec, fake, terms };
}

describe("blocked raw connections in the live feed and notifications", () => {
  test("macOS: the driver's watchers run tcpdump under sbx's PTY; a blocked packet reaches the feed once and the notifier once", async () => {
    const { exec, terms } = macExec();
    const store = new Store(":memory:");
    const events = createEventBus();
    const feed: FeedEvent[] = [];
    events.subscribe((e) => feed.push(e));
    const notes = new FakeExec().expect((a) => a[0] === "osascript");
    const notifier = createDesktopNotifier({ exec: notes, platform: "darwin", log: silentLogger });
    events.subscribe((e) => notifier.onEvent(e));

    const backend = new MacosBackend({ exec, root: { run: async () => ({ changed: false, out: "" }) }, hostUser: "alice", runtimeDir: "/tmp/sbx-501", runtime: "/b/bun", shimDir: "/b/shims" });
    const base = processEnv();
    const env: Env = { ...base, platform: "darwin", uid: 501, gid: 20, userName: "alice", vars: { ...base.vars, HOME: "/Users/alice" } };
    const comps = await productionComponents({ env, paths, exec, log: silentLogger, store, events }, { macos: backend });
    const row = store.createSandbox({ name: "demo", repo: "/Users/alice/src/demo", backend: "macos", identity });
    // As the daemon starts them: the service asks each driver what it watches, the feed is the daemon's rawBlockFeed.
    const service = new SandboxService({ exec, env, paths, store, drivers: { macos: () => comps.drivers.macos! }, defaultKind: "macos", log: () => {} });
    const watchers = await service.watch({ log: silentLogger, blocked: rawBlockFeed(store, events.publish), notify: () => {} });
    const svc = { stop: async () => void (await Promise.all(watchers.map((w) => w.stop()))) };
    expect(terms.map((t) => t.argv)).toEqual([monitorCommand()]);
    const send = (s: string) => terms[0]!.opts.onData(new TextEncoder().encode(s));
    // a line split across PTY reads, then its SYN retry (audited once, published once)
    const l = PFLOG("93.184.216.34");
    send(l.slice(0, 40));
    send(l.slice(40) + l);
    await until(() => feed.length === 1);
    await Bun.sleep(10);
    expect(feed).toHaveLength(1);
    expect(feed[0]).toMatchObject({
      kind: "egress",
      action: "denied",
      sandbox: { id: row.id, name: "demo" },
      method: "TCP",
      host: "93.184.216.34",
      port: 443,
      reason: "blocked-raw",
      suggest: null,
    });
    expect(store.listAudit({ sandboxId: row.id }).map((r) => [r.kind, r.action])).toEqual([["egress", "blocked-raw"]]);
    // what the dashboard shows on connect (history from the audit log) is the same event
    const history = store.listAudit({ sandboxId: row.id }).map((r) => feedFromAudit(r, () => "demo"));
    expect({ ...history[0], at: 0 }).toEqual({ ...feed[0]!, at: 0 });
    await notifier.idle();
    expect(notes.calls).toHaveLength(1);
    expect(notes.calls[0]!.argv.slice(-2)).toEqual([
      "sbx: demo tried to connect around its proxy",
      "TCP 93.184.216.34:443 was dropped by the firewall. Only traffic through the sbx proxy leaves a sandbox; `sbx logs --sandbox demo` lists these attempts.",
    ]);
    await svc.stop();
    expect(terms[0]!.kills).toEqual(["SIGTERM"]);
    notes.assertDone();
  });

  test("Linux: the kernel-log audit publishes the same way (SYN retries audited, published once)", async () => {
    const store = new Store(":memory:");
    const row = store.createSandbox({ name: "lin", repo: "/home/alice/proj", backend: "linux-user", identity: { ...identity, hostUser: { ...identity.hostUser, home: "/home/alice" } } });
    let dmesg = "<4>[  10.000000] sbx-block uid=7001 IN= OUT=eth0 SRC=10.0.0.2 DST=10.9.9.9 LEN=60 PROTO=TCP SPT=4000 DPT=80\n";
    const exec = new FakeExec().always(["dmesg", "--raw", "--kernel"], () => ({ stdout: dmesg }));
    const linuxUser = { inventory: async () => new Map([["0a1b2c3d4e5f", { id: "0a1b2c3d4e5f", user: { uid: 7001 } }]]) } as unknown as LinuxUserBackend;
    const feed: FeedEvent[] = [];
    const publish = rawBlockFeed(store, (e) => feed.push(e));
    const svc = startKernelLogAudit({ backend: linuxUser, exec, store, paths: { runtimeDir: "/run/sbx", sandboxRoot: "/root/.cache/sandbox" } as Paths, log: silentLogger, intervalMs: 5, onEvent: (sid, e, id) => publish(sid, id, auditOf(e)) });
    await until(() => exec.calls.length >= 2); // the first poll skipped what was logged before the daemon started
    dmesg += "<4>[  11.000000] sbx-block uid=7001 IN= OUT=eth0 SRC=10.0.0.2 DST=10.9.9.9 LEN=60 PROTO=TCP SPT=4001 DPT=80\n";
    dmesg += "<4>[  12.000000] sbx-block uid=7001 IN= OUT=eth0 SRC=10.0.0.2 DST=10.9.9.9 LEN=60 PROTO=TCP SPT=4001 DPT=80\n";
    await until(() => store.listAudit({ sandboxId: row.id }).length === 2);
    await svc.stop();
    expect(feed).toHaveLength(1);
    expect(feed[0]).toMatchObject({ kind: "egress", action: "denied", sandbox: { id: row.id, name: "lin" }, method: "TCP", host: "10.9.9.9", port: 80, reason: "blocked-raw" });
  });

  test("rawBlockFeed: repeats within the window are not published again; other destinations and sandboxes are", () => {
    const store = new Store(":memory:");
    const a = store.createSandbox({ name: "a", repo: "/r", backend: "macos", identity });
    let t = 0;
    const out: FeedEvent[] = [];
    const feed = rawBlockFeed(store, (e) => out.push(e), { windowMs: 10_000, now: () => t });
    const audit = (dst: string) => ({ kind: "egress", action: "blocked-raw", detail: { uid: 7001, proto: "udp", dst, dport: 53, summary: `udp ${dst}:53` } });
    feed(a.id, 1, audit("1.1.1.1"));
    feed(a.id, 2, audit("1.1.1.1"));
    feed(a.id, 3, audit("8.8.8.8"));
    feed(a.id + 1, 4, audit("1.1.1.1"));
    t = 10_000;
    feed(a.id, 5, audit("1.1.1.1"));
    expect(out.map((e) => (e.kind === "egress" ? `${e.sandbox.id} ${e.host}` : ""))).toEqual([`${a.id} 1.1.1.1`, `${a.id} 8.8.8.8`, `${a.id + 1} 1.1.1.1`, `${a.id} 1.1.1.1`]);
  });

  test("the notification of a blocked raw connection offers no allow (nothing to approve); proxy denials keep theirs", () => {
    const ev = { kind: "egress" as const, at: 0, sandbox: { id: 1, name: "demo" }, action: "denied" as const, method: "UDP", host: "1.1.1.1", port: 53 };
    expect(blockedNotification({ ...ev, reason: "blocked-raw", suggest: null }).body).not.toContain("sbx allow");
    expect(blockedNotification({ ...ev, method: "CONNECT", reason: "not_allowlisted" }).body).toContain("sbx allow 1.1.1.1");
  });
});
