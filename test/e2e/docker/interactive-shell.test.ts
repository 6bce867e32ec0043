// An interactive `sbx shell` driven through tmux: PTY relay, keystrokes, ^C, resize, and the inner exit code.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { CLI, acquireFixture, canRun, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

const hasTmux = Bun.spawnSync(["sh", "-c", "command -v tmux"]).exitCode === 0;
const run = canRun && hasTmux;
const why = !canRun ? skipReason : "tmux is not installed";

function tmux(...args: string[]): string {
  return Bun.spawnSync(["tmux", ...args], { stdout: "pipe", stderr: "pipe" }).stdout.toString();
}

async function until(pred: () => boolean, ms = 15_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await Bun.sleep(100);
  }
  return pred();
}

describe.skipIf(!run)(`interactive sbx shell in tmux${run ? "" : ` — skipped: ${why}`}`, () => {
  let f: Fixture;
  const session = `sbx-e2e-${process.pid}`;
  let exitFile = "";
  beforeAll(() => {
    f = acquireFixture();
    mustCreate(f, "tty", { SHELL: "/bin/bash" });
    exitFile = join("/tmp", `${session}.exit`);
    rmSync(exitFile, { force: true });
  }, 90_000);
  afterAll(() => {
    tmux("kill-session", "-t", session);
    rmSync(exitFile, { force: true });
    f?.sbx(["rm", "--force", "tty"]);
    releaseFixture();
  }, 60_000);

  test("keys in, output out, ^C interrupts, resize reaches the inner tty, exit code comes back", async () => {
    const inner = [...f.user.prefix({ SHELL: "/bin/bash", TERM: "xterm-256color" }), "bun", CLI, "shell", "tty"]
      .map((a) => `'${a.replace(/'/g, "'\\''")}'`)
      .join(" ");
    const cmd = `cd '${join(f.repo, "sub")}' && ${inner}; echo $? > ${exitFile}`;
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "sh", "-c", cmd);
    const pane = () => tmux("capture-pane", "-p", "-t", session);
    tmux("send-keys", "-t", session, "echo SBX_$((6*7)) in $PWD", "Enter");
    expect(await until(() => pane().includes(`SBX_42 in ${join(f.repo, "sub")}`))).toBe(true);

    tmux("send-keys", "-t", session, "sleep 30; echo not-interrupted", "Enter");
    await Bun.sleep(500);
    tmux("send-keys", "-t", session, "C-c");
    tmux("send-keys", "-t", session, "echo after-$((1+1))", "Enter");
    expect(await until(() => pane().includes("after-2"), 5_000)).toBe(true);
    expect(pane().split("\n").map((l) => l.trim())).not.toContain("not-interrupted");

    tmux("resize-window", "-t", session, "-x", "100", "-y", "30");
    // The resize travels SIGWINCH → CLI → daemon → inner tty with no reply to wait on: ask again until it has arrived.
    let asked = 0;
    const resized = await until(() => {
      if (pane().includes("size=30 100")) return true;
      if (asked++ % 10 === 0) tmux("send-keys", "-t", session, "echo size=$(stty size)", "Enter");
      return false;
    }, 8_000);
    expect(resized).toBe(true);

    tmux("send-keys", "-t", session, "exit 5", "Enter");
    expect(await until(() => existsSync(exitFile) && readFileSync(exitFile, "utf8").trim() !== "")).toBe(true);
    expect(readFileSync(exitFile, "utf8").trim()).toBe("5");
  }, 90_000);

  test("sbx stop of a sandbox with an open shell: asked at a terminal (no keeps it), then the shell is told why it ends", async () => {
    const q = (argv: string[]) => [...f.user.prefix({ SHELL: "/bin/bash", TERM: "xterm-256color" }), ...argv].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
    const shellWin = `${session}-sh`;
    const stopWin = `${session}-stop`;
    tmux("new-session", "-d", "-s", shellWin, "-x", "120", "-y", "40", "sh", "-c", `cd '${f.repo}' && ${q(["bun", CLI, "shell", "tty"])}; echo shell-ended; sleep 30`);
    const shellPane = () => tmux("capture-pane", "-p", "-t", shellWin);
    tmux("send-keys", "-t", shellWin, "echo READY_$((2*3))", "Enter");
    expect(await until(() => shellPane().includes("READY_6"))).toBe(true);
    // At a terminal: asked; "n" keeps the sandbox and its shell.
    tmux("new-session", "-d", "-s", stopWin, "-x", "120", "-y", "20", "sh", "-c", `cd '${f.repo}' && ${q(["bun", CLI, "stop", "tty"])}; echo stop-exit=$?; sleep 30`);
    const stopPane = () => tmux("capture-pane", "-p", "-t", stopWin);
    expect(await until(() => stopPane().includes("sandbox tty has 1 open session. End it and stop tty? [y/N]"))).toBe(true);
    tmux("send-keys", "-t", stopWin, "n", "Enter");
    expect(await until(() => stopPane().includes("stop-exit=75"))).toBe(true);
    expect(stopPane()).toContain("was not stopped: its sessions stay open");
    tmux("send-keys", "-t", shellWin, "echo STILL_$((3*3))", "Enter");
    expect(await until(() => shellPane().includes("STILL_9"))).toBe(true);
    // With no terminal to ask at: it ends the shell, whose screen says why, and says how many it ended.
    const r = f.sbx(["stop", "tty"]);
    tmux("kill-session", "-t", stopWin);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("ended 1 session(s) of tty");
    expect(await until(() => shellPane().includes("shell-ended"))).toBe(true);
    expect(shellPane()).toContain("sbx: sandbox tty is being stopped (sbx stop); this session ends.");
    tmux("kill-session", "-t", shellWin);
  }, 90_000);
});
