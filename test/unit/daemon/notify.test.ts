// Desktop notifications: golden argv per platform (no text spliced into AppleScript, markup escaped), one per sandbox+host per interval, a missing notifier switches off.
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../../src/sys/log";
import { blockedNotification, createDesktopNotifier, notificationArgv, type EgressFeedEvent } from "../../../src/daemon/notify";
import type { FeedEvent } from "../../../src/events/feed";
import { FakeExec } from "../../fakes/exec";

function denied(host: string, sandbox = { id: 1, name: "demo" }, port = 443): EgressFeedEvent {
  return { kind: "egress", at: 0, sandbox, action: "denied", method: "CONNECT", host, port, reason: "not-allowed", suggest: host };
}

describe("notification text and argv (pure)", () => {
  test("the text names the sandbox, the host and the exact command that allows it", () => {
    expect(blockedNotification(denied("example.org"))).toEqual({
      title: "sbx: demo was refused example.org",
      body: "CONNECT example.org:443 (not-allowed). To allow it: sbx allow example.org --sandbox demo",
    });
  });

  test("linux: notify-send with the body's markup escaped", () => {
    expect(notificationArgv("linux", { title: "t <b>", body: "a <i>x</i> & b" })).toEqual([
      "notify-send", "--app-name=sbx", "--urgency=normal", "t <b>", "a &lt;i&gt;x&lt;/i&gt; &amp; b",
    ]);
  });

  test("macOS: title and body are osascript's run arguments, never part of the script", () => {
    const evil = `x" & (do shell script "touch /tmp/pwned") & "`;
    const argv = notificationArgv("darwin", { title: evil, body: evil })!;
    expect(argv).toEqual([
      "osascript",
      "-e", "on run argv",
      "-e", "display notification (item 2 of argv) with title (item 1 of argv)",
      "-e", "end run",
      evil,
      evil,
    ]);
    // The script lines (the -e values) are constants.
    const script = argv.filter((_, i) => argv[i - 1] === "-e");
    for (const line of script) expect(line).not.toContain("pwned");
  });

  test("elsewhere: no notifier", () => {
    expect(notificationArgv("win32", { title: "t", body: "b" })).toBeNull();
  });
});

describe("createDesktopNotifier", () => {
  const log = createLogger(() => {}, "error");

  test("one notification per sandbox and host per interval; other hosts, sandboxes and later repeats do notify", async () => {
    const exec = new FakeExec().always((a) => a[0] === "notify-send", { exitCode: 0 });
    let now = 0;
    const n = createDesktopNotifier({ exec, platform: "linux", log, minIntervalMs: 60_000, now: () => now });
    n.onEvent(denied("example.org"));
    n.onEvent(denied("example.org"));
    n.onEvent(denied("example.org", { id: 1, name: "demo" }, 8443));
    n.onEvent(denied("other.org"));
    n.onEvent(denied("example.org", { id: 2, name: "web" }));
    now = 59_999;
    n.onEvent(denied("example.org"));
    now = 60_000;
    n.onEvent(denied("example.org"));
    await n.idle();
    expect(exec.calls.map((c) => c.argv[3])).toEqual([
      "sbx: demo was refused example.org",
      "sbx: demo was refused other.org",
      "sbx: web was refused example.org",
      "sbx: demo was refused example.org",
    ]);
    expect(exec.calls.every((c) => c.opts.timeoutMs !== undefined && c.opts.check === false)).toBe(true);
  });

  test("only denied egress notifies", async () => {
    const exec = new FakeExec();
    const n = createDesktopNotifier({ exec, platform: "linux", log });
    const others: FeedEvent[] = [
      { ...denied("a.org"), action: "allowed" },
      { kind: "bridge", at: 0, sandbox: { id: 1, name: "demo" }, command: ["git", "push"], outcome: "refused" },
      { kind: "decision", at: 0, sandbox: null, action: "allow", pattern: "a.org", scope: "global", by: "ui" },
    ];
    for (const e of others) n.onEvent(e);
    await n.idle();
    expect(exec.calls).toEqual([]);
  });

  test("a missing notify-send (exit 127) switches notifications off after one try, with one log line", async () => {
    const lines: string[] = [];
    const exec = new FakeExec().expect((a) => a[0] === "notify-send", { exitCode: 127, stderr: "not found" }, 1);
    const n = createDesktopNotifier({ exec, platform: "linux", log: createLogger((l) => void lines.push(l), "info") });
    n.onEvent(denied("a.org"));
    await n.idle();
    expect(n.enabled).toBe(false);
    n.onEvent(denied("b.org"));
    await n.idle();
    exec.assertDone();
    expect(exec.calls).toHaveLength(1);
    expect(lines.filter((l) => l.includes("desktop notifications off"))).toHaveLength(1);
  });

  test("a failing notifier is logged and the next host still notifies", async () => {
    const lines: string[] = [];
    const exec = new FakeExec().always((a) => a[0] === "notify-send", { exitCode: 1, stderr: "no dbus" });
    const n = createDesktopNotifier({ exec, platform: "linux", log: createLogger((l) => void lines.push(l), "info") });
    n.onEvent(denied("a.org"));
    n.onEvent(denied("b.org"));
    await n.idle();
    expect(exec.calls).toHaveLength(2);
    expect(n.enabled).toBe(true);
    expect(lines.filter((l) => l.includes("desktop notification failed"))).toHaveLength(2);
  });
});
