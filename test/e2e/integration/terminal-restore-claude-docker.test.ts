// terminal-restore with the real program: Claude Code (the pinned test package) interactive in a Docker sandbox, in a
// tmux pane where a person's shell runs `sbx run claude t`. Ctrl-P Ctrl-Q leaves the pane's terminal as the shell had
// it (tmux's own mode flags, each one) with the shell's prompt back under sbx's note; `sbx attach t` brings Claude's
// screen back (repainted at the pane's size, its modes on again); SIGTERM to that client (by its pid) restores too.
// No key and no network: the LLM route goes to a fake on 127.0.0.1, the package comes from a loopback npm mirror.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { realpathSync, rmSync } from "node:fs";
import type { Fixture } from "../docker/fixture";
import { CLI } from "../docker/fixture";
import { FAKE_ANSWER, startFakeAgentLlm, type FakeAgentLlm } from "../../support/fake-agent-llm";
import { haveClaude, noClaudeReason, startClaudeMirror } from "./claude-package";
import { acquireFixture, canRun, containerOf, docker, done, makeRepo, must, releaseFixture, removeRepoImages, skipReason, stopDaemon } from "./harness";

const hasTmux = Bun.spawnSync(["sh", "-c", "command -v tmux"]).exitCode === 0;
const run = canRun && haveClaude && hasTmux;
const why = !canRun ? skipReason : !haveClaude ? noClaudeReason : "tmux is not installed";

const tag = Math.random().toString(36).slice(2, 8);
const SOCK = `/tmp/sbxt-claude-tmux-${tag}.sock`;
const PROMPT = "host-shell$ ";
/** The prompt as capture-pane shows it (trailing blanks trimmed). */
const PROMPT_RE = "host-shell\\$";
const ANTHROPIC = `sk-ant-api03-tmux${tag}${"a".repeat(24)}`;

/** tmux's own view of the pane's terminal modes, in this order. */
const FLAG_NAMES = ["alternate_on", "cursor_flag", "mouse_standard_flag", "mouse_button_flag", "mouse_any_flag", "mouse_sgr_flag", "keypad_flag", "keypad_cursor_flag", "origin_flag", "insert_flag"] as const;
/** The pane's modes as the shell left them, before Claude ran (read at the start, checked against every way out). */
let plain: Record<string, string> = {};

let f: Fixture;
let repo = "";
let env: Record<string, string>;
let llm: FakeAgentLlm;
let mirror: ReturnType<typeof Bun.serve> | undefined;

function tmux(...args: string[]): string {
  const r = Bun.spawnSync(["tmux", "-S", SOCK, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`tmux ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

function flags(): Record<string, string> {
  const v = tmux("display", "-p", "-t", "t:0", FLAG_NAMES.map((n) => `#{${n}}`).join(" ")).trim().split(" ");
  return Object.fromEntries(FLAG_NAMES.map((n, i) => [n, v[i]!]));
}

const capture = () => tmux("capture-pane", "-p", "-J", "-t", "t:0");

async function waitPane(re: RegExp, ms = 60_000): Promise<string> {
  const until = Date.now() + ms;
  for (;;) {
    const text = capture();
    if (re.test(text)) return text;
    if (Date.now() > until) throw new Error(`the pane never matched ${re}:\n${text}`);
    await Bun.sleep(100);
  }
}

/** A line typed into the pane's shell: sbx as the test user (its environment, as a person's terminal has it), then its exit code. */
function typeSbx(args: string[]): void {
  const q = (a: string) => `'${a.replace(/'/g, "'\\''")}'`;
  const line = `${[...f.user.prefix({ ...env, TERM: "xterm-256color" }), "bun", CLI, ...args].map(q).join(" ")}; echo "[sbx exited: $?]"`;
  tmux("send-keys", "-t", "t:0", "-l", line);
  tmux("send-keys", "-t", "t:0", "Enter");
}

/** The pid of the sbx CLI under the pane's shell that runs `words` (the shell → runuser → bun chain). */
function cliPid(words: string): number {
  const shell = Number(tmux("list-panes", "-t", "t:0", "-F", "#{pane_pid}").trim());
  const rows = Bun.spawnSync(["ps", "-e", "-o", "pid=,ppid=,args="]).stdout.toString().split("\n").filter(Boolean).map((l) => {
    const m = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l)!;
    return { pid: Number(m[1]), ppid: Number(m[2]), args: m[3]! };
  });
  const under = new Set([shell]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const r of rows) if (under.has(r.ppid) && !under.has(r.pid)) (under.add(r.pid), (grew = true));
  }
  const hit = rows.filter((r) => under.has(r.pid) && r.args.includes(CLI) && r.args.includes(words) && !r.args.startsWith("runuser"));
  if (hit.length !== 1) throw new Error(`expected one sbx CLI running '${words}' under the pane, found ${JSON.stringify(hit)}`);
  return hit[0]!.pid;
}

/** Claude Code's own screen: its input prompt. */
const CLAUDE_UI = /❯/;

describe.skipIf(!run)(`terminal-restore: real Claude Code under tmux in a Docker sandbox${run ? "" : ` (skipped: ${why})`}`, () => {
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `tmux-claude-${tag}`);
    mirror = startClaudeMirror();
    llm = await startFakeAgentLlm();
    await stopDaemon(f.user);
    env = { SBX_NPM_REGISTRY: mirror.url.origin, SBX_TEST_ONLY_LLM_UPSTREAMS: JSON.stringify({ anthropic: llm.url }) };
    must(f.sbx(["secret", "set", "ANTHROPIC_API_KEY"], { cwd: repo, env, stdin: ANTHROPIC }), "secret ANTHROPIC_API_KEY");
    must(f.sbx(["create", "t"], { cwd: repo, env }), "sbx create t");
    // Installed once (from the mirror) before the terminal run, so the pane shows Claude and not the download.
    // Spawned, not run synchronously: the mirror and the fake provider answer from this process.
    must(await done(f.spawnSbx(["run", "claude", "t", "--", "--version"], { cwd: repo, env })), "sbx run claude t -- --version");
    // A person's shell in a 120x40 terminal, with a prompt of its own to find.
    tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "env", "-i", `PS1=${PROMPT}`, "TERM=xterm-256color", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp", "bash", "--norc", "--noprofile", "-i");
    tmux("send-keys", "-t", "t:0", `cd '${repo}'`, "Enter");
    await waitPane(new RegExp(`^${PROMPT_RE}\\s*$`, "m"));
    plain = flags();
  }, 300_000);

  afterAll(async () => {
    Bun.spawnSync(["tmux", "-S", SOCK, "kill-server"]);
    rmSync(SOCK, { force: true });
    try {
      if (repo) {
        f.sbx(["secret", "rm", "ANTHROPIC_API_KEY"], { cwd: repo, env });
        f.sbx(["rm", "--force", "t"], { cwd: repo, env });
        removeRepoImages(repo);
      }
    } catch (e) {
      console.warn(`cleanup through sbx failed: ${e}`);
    }
    mirror?.stop(true);
    await llm?.stop();
    if (f) await stopDaemon(f.user);
    if (f) releaseFixture();
  }, 60_000);

  test("detach, reattach, and the client killed: each way out leaves tmux's flags as the shell had them; reattach repaints Claude", async () => {
    // 1. Claude Code interactive, from the shell.
    typeSbx(["run", "claude", "t"]);
    await waitPane(CLAUDE_UI, 120_000);
    await Bun.sleep(1500); // its first frames settle (modes are set as it draws)
    const tui = flags();
    // Claude turned on modes of its own: what the restore has to undo (said in the report, checked below per flag).
    expect(tui).not.toEqual(plain);
    console.log(`Claude Code's modes in the pane: ${JSON.stringify(tui)} (the shell's: ${JSON.stringify(plain)})`);

    // 2. Ctrl-P Ctrl-Q: every flag back to the shell's, sbx's note on a line of its own, then the shell's prompt.
    tmux("send-keys", "-t", "t:0", "C-p", "C-q");
    const detached = await waitPane(new RegExp(`\\[sbx exited: 0\\]\\n${PROMPT_RE}`));
    expect(flags()).toEqual(plain);
    expect(detached).toMatch(/^sbx: detached; session \S+ goes on running/m);
    const ps = JSON.parse(must(f.sbx(["ps", "--json"], { cwd: repo, env }), "sbx ps").stdout) as { id: string; sandbox: string; command: string[]; exitCode: number | null; clients: number }[];
    const session = ps.find((s) => s.sandbox === "t" && s.exitCode === null);
    expect(session?.command).toEqual(["claude"]);
    expect(session?.clients).toBe(0);

    // 3. `sbx attach t` from the same shell: Claude's screen is back (repainted for this pane), its modes on again.
    tmux("send-keys", "-t", "t:0", "clear", "Enter");
    await waitPane(new RegExp(`^${PROMPT_RE}\\s*$`, "m"));
    typeSbx(["attach", "t"]);
    const back = await waitPane(CLAUDE_UI, 30_000);
    expect(back).not.toContain("[sbx exited");
    await Bun.sleep(1000);
    expect(flags()).toEqual(tui);

    // 4. The client killed (SIGTERM to its pid): it restores before it goes; the session runs on.
    process.kill(cliPid("attach"), "SIGTERM");
    const killed = await waitPane(new RegExp(`\\[sbx exited: 143\\]\\n${PROMPT_RE}`));
    expect(flags()).toEqual(plain);
    expect(killed).toMatch(/^sbx: SIGTERM ended this client; session \S+ goes on running/m);
    const after = JSON.parse(must(f.sbx(["ps", "--json"], { cwd: repo, env }), "sbx ps").stdout) as { id: string; exitCode: number | null }[];
    expect(after.find((s) => s.id === session!.id)?.exitCode).toBeNull();
  }, 300_000);

  test("resume: detach keeps the conversation; a daemon stop, a daemon killed and `sbx stop` each leave no agent running inside; --resume ID brings it back", async () => {
    const ctr = containerOf(realpathSync(repo), "t");
    /** Claude Code processes running in the sandbox. */
    const claudes = () => docker(["exec", ctr, "ps", "-eo", "pid=,args="]).stdout.split("\n").filter((l) => /\/claude( |$)/.test(l));
    const until = async (ok: () => boolean, what: string, ms = 10_000) => {
      for (const end = Date.now() + ms; !ok(); await Bun.sleep(100)) if (Date.now() > end) throw new Error(`${what}: ${JSON.stringify(claudes())}`);
    };
    const fresh = async () => {
      tmux("send-keys", "-t", "t:0", "clear", "Enter");
      await waitPane(new RegExp(`^${PROMPT_RE}\\s*$`, "m"));
    };
    const detach = async () => {
      tmux("send-keys", "-t", "t:0", "C-p", "C-q");
      await waitPane(new RegExp(`\\[sbx exited: 0\\]\\n${PROMPT_RE}`));
    };
    const resumeShows = async (id: string) => {
      await fresh();
      typeSbx(["run", "claude", "t", "--resume", id]);
      await waitPane(new RegExp(FAKE_ANSWER), 120_000);
    };
    // The first test's session (detached, then its client killed) runs on: a conversation in a session of its own.
    await stopDaemon(f.user);
    await until(() => claudes().length === 0, "a daemon stop leaves Claude running");
    await fresh();
    typeSbx(["run", "claude", "t"]);
    await waitPane(CLAUDE_UI, 120_000);
    await Bun.sleep(1500);
    tmux("send-keys", "-t", "t:0", "-l", "hello there");
    await Bun.sleep(300);
    tmux("send-keys", "-t", "t:0", "Enter");
    await waitPane(new RegExp(FAKE_ANSWER), 60_000);
    const id = docker(["exec", "--user", `${f.user.uid}:${f.user.gid}`, ctr, "sh", "-c", "ls $HOME/.claude/projects/*/ | sed -n 's/\\.jsonl$//p'"]).stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    // 1. Detached: the session and its agent run on (`sbx attach` is all it takes).
    await detach();
    expect(claudes()).toHaveLength(1);

    // 2. The daemon stopped (SIGTERM: a restart, a service stop): its sessions end, inside too.
    await stopDaemon(f.user);
    await until(() => claudes().length === 0, "the daemon stopped, and Claude runs on in the container");
    await resumeShows(id);
    await detach();

    // 3. The daemon killed (no chance to hang anything up): the agent is left running until the sandbox's next
    //    terminal session, which ends it beside its own start: never two agents on one conversation.
    await stopDaemon(f.user, "SIGKILL");
    await Bun.sleep(1000);
    expect(claudes()).toHaveLength(1);
    await resumeShows(id);
    await until(() => claudes().length === 1, "the killed daemon's session runs on beside the new one");
    await detach();

    // 4. `sbx stop`: the container stops, with everything in it; its home (and the conversation) stays.
    must(f.sbx(["stop", "t"], { cwd: repo, env }), "sbx stop t");
    await resumeShows(id);
    await until(() => claudes().length === 1, "one Claude after the stop");
    await detach();
  }, 600_000);
});
