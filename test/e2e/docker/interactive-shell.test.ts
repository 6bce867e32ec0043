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
});
