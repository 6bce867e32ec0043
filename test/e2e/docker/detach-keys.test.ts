// Detaching is sbx's alone, on a real engine in a real terminal (tmux): with other keys chosen (`--detach-keys`, or
// `none` in the config file), Ctrl-P Ctrl-Q reach the program like any keys, and the engine's own detach never ends
// the session while its shell runs on unseen in the container. Its own throwaway user and repo, removed after.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTestUser, type TestUser } from "../../support/test-user";
import { CLI, canRun, ownRepo, removeOwnWorld, skipReason } from "./fixture";

const hasTmux = Bun.spawnSync(["sh", "-c", "command -v tmux"]).exitCode === 0;
const run = canRun && hasTmux;
const why = !canRun ? skipReason : "tmux is not installed";
const TMUX = `sbx-detach-${Math.random().toString(36).slice(2, 8)}`;
const q = (a: string) => `'${a.replace(/'/g, "'\\''")}'`;
const tmux = (...args: string[]) => Bun.spawnSync(["tmux", "-L", TMUX, ...args], { stdout: "pipe", stderr: "pipe" }).stdout.toString();
const pane = (w: string) => tmux("capture-pane", "-p", "-J", "-t", w);
const docker = (args: string[]) => Bun.spawnSync(["docker", ...args], { stdout: "pipe", stderr: "pipe" }).stdout.toString();

async function until(pred: () => boolean, ms = 20_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await Bun.sleep(100)) if (pred()) return true;
  return pred();
}

describe.skipIf(!run)(`detach keys are sbx's, not the engine's (Docker)${run ? "" : ` — skipped: ${why}`}`, () => {
  let user: TestUser;
  let repo = "";
  const sbx = (args: string[]) => user.run(["bun", CLI, ...args], { cwd: repo });
  /** sbx as the test user in a tmux window (a real terminal); its exit code is printed after it. */
  const inTmux = (win: string, args: string[]) => {
    const inner = [...user.prefix({ TERM: "xterm-256color" }), "bun", CLI, ...args].map(q).join(" ");
    tmux("new-session", "-d", "-s", win, "-x", "160", "-y", "40", "sh", "-c", `cd ${q(repo)} && ${inner}; echo "EXIT=$?"; sleep 60`);
  };
  /** The shells running in the sandbox's container (what an engine detach would leave behind). */
  const shells = () => docker(["top", docker(["ps", "--quiet", "--filter", `label=sbx.repo=${repo}`]).trim(), "-o", "args"]).split("\n").filter((l) => /^\/bin\/bash -l/.test(l.trim()));
  /** Types a line that shows the next two keys' bytes as hex (raw mode: the terminal keeps none of them). */
  const showTwoKeys = (win: string) => tmux("send-keys", "-t", win, "sh -c 'stty raw -echo; head -c 2 | od -An -tx1; stty sane'", "Enter");

  beforeAll(() => {
    user = createTestUser();
    repo = ownRepo(user, "dk");
    const c = sbx(["create", "dk"]);
    if (c.code !== 0) throw new Error(`sbx create dk exited ${c.code}: ${c.stderr}`);
  }, 180_000);

  afterAll(async () => {
    Bun.spawnSync(["tmux", "-L", TMUX, "kill-server"]);
    if (!user) return;
    await removeOwnWorld(user, repo, () => {
      sbx(["rm", "--force", "dk"]);
    });
  }, 60_000);

  test("--detach-keys ctrl-a,d: Ctrl-P Ctrl-Q reach the program and the session goes on; Ctrl-A d detaches; --attach joins it again", async () => {
    inTmux("a", ["shell", "dk", "--shell", "bash", "--detach-keys", "ctrl-a,d"]);
    expect(await until(() => pane("a").includes("@dk:"))).toBe(true);
    showTwoKeys("a");
    await Bun.sleep(500);
    tmux("send-keys", "-t", "a", "C-p", "C-q");
    const got = await until(() => pane("a").includes(" 10 11"));
    expect({ got, screen: got ? "" : pane("a") }).toEqual({ got: true, screen: "" });
    tmux("send-keys", "-t", "a", 'echo STILL_4"2"', "Enter");
    expect(await until(() => pane("a").includes("STILL_42"))).toBe(true);
    expect(pane("a")).not.toContain("read escape sequence");
    tmux("send-keys", "-t", "a", "C-a", "d");
    expect(await until(() => pane("a").includes("EXIT=0"))).toBe(true);
    const id = /session (\S+) goes on running/.exec(pane("a"))?.[1];
    expect(id).toBeDefined();
    inTmux("b", ["shell", "--attach", id!]);
    expect(await until(() => pane("b").includes("STILL_42"))).toBe(true);
    tmux("send-keys", "-t", "b", "exit 3", "Enter");
    expect(await until(() => pane("b").includes("EXIT=3"))).toBe(true);
    expect(await until(() => shells().length === 0, 5_000)).toBe(true);
  }, 120_000);

  test("detachKeys none in the config file: Ctrl-P Ctrl-Q reach the program; the shell's exit ends the session, nothing left running", async () => {
    const dir = join(user.home, ".config", "sbx");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "config.json"), JSON.stringify({ detachKeys: "none" }));
    for (const p of [join(user.home, ".config"), dir, join(dir, "config.json")]) chownSync(p, user.uid, user.gid);
    inTmux("c", ["shell", "--shell", "bash", "dk"]);
    expect(await until(() => pane("c").includes("@dk:"))).toBe(true);
    showTwoKeys("c");
    await Bun.sleep(500);
    tmux("send-keys", "-t", "c", "C-p", "C-q");
    const got = await until(() => pane("c").includes(" 10 11"));
    expect({ got, screen: got ? "" : pane("c") }).toEqual({ got: true, screen: "" });
    tmux("send-keys", "-t", "c", "exit 4", "Enter");
    expect(await until(() => pane("c").includes("EXIT=4"))).toBe(true);
    expect(pane("c")).not.toContain("read escape sequence");
    expect(await until(() => shells().length === 0, 5_000)).toBe(true);
  }, 120_000);
});
