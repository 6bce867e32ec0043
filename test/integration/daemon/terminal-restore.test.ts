// terminal-restore: a client that leaves a session (detach keys, killed, the daemon gone) gives the person's terminal
// back as it was: tmux's own mode flags for the pane, read before and after, with a small full-screen program of our own.
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type DaemonProc, killDaemonProc, makeWorld, seedSandbox, startDaemonProc, type World, startSandbox } from "../../support/daemon-proc";

let w: World;
let d: DaemonProc | undefined;
let tmuxSocket: string | undefined;
afterEach(async () => {
  if (tmuxSocket) {
    Bun.spawnSync(["tmux", "-S", tmuxSocket, "kill-server"]);
    tmuxSocket = undefined;
  }
  await killDaemonProc(d);
  d = undefined;
  w?.cleanup();
});

const hasTmux = Bun.spawnSync(["sh", "-c", "command -v tmux"]).exitCode === 0;

/** A curses-like program: turns on what TUIs turn on, draws, and redraws (saying its size) on every SIGWINCH. */
const TUI = [
  `printf '\\033[?1049h\\033[?1000h\\033[?1002h\\033[?1006h\\033[?2004h\\033[?25l\\033=\\033[?1h\\033[?1004h\\033[>1u\\033[2J\\033[HTUI-DRAWN'`,
  `trap 'printf "\\033[2J\\033[HREPAINTED-%s" "$(stty size | tr " " x)"' WINCH`,
  "while :; do sleep 0.1; done",
].join("; ");

const FLAGS = "#{alternate_on} #{cursor_flag} #{mouse_standard_flag} #{mouse_button_flag} #{mouse_any_flag} #{mouse_sgr_flag} #{keypad_flag} #{keypad_cursor_flag}";
/** alternate screen on, cursor hidden, mouse (tmux keeps the last of 1000/1002: drag, so "any mouse" is on), SGR mouse, keypad and cursor keys in application mode. */
const TUI_FLAGS = "1 0 0 1 1 1 1 1";
/** A terminal as a shell leaves it. */
const PLAIN_FLAGS = "0 1 0 0 0 0 0 0";

describe.skipIf(!hasTmux)(`terminal-restore: real terminals (tmux)${hasTmux ? "" : " (skipped: tmux is not installed)"}`, () => {
  function harness() {
    tmuxSocket = join(w.root, "tmux.sock");
    const term = join(import.meta.dir, "..", "..", "support", "daemon-term.ts");
    const tmux = (...args: string[]) => {
      const r = Bun.spawnSync(["tmux", "-S", tmuxSocket!, ...args], { env: { ...w.env, TERM: "xterm-256color", SBX_TEST_DETACH_KEYS: "ctrl-p,ctrl-q" } });
      if (r.exitCode !== 0) throw new Error(`tmux ${args.join(" ")}: ${r.stderr.toString()}`);
      return r.stdout.toString();
    };
    const flags = (target: string) => tmux("display", "-p", "-t", target, FLAGS).trim();
    const capture = (target: string) => tmux("capture-pane", "-p", "-J", "-t", target);
    const waitPane = async (target: string, re: RegExp, ms = 10_000) => {
      const until = Date.now() + ms;
      for (;;) {
        const text = capture(target);
        if (re.test(text)) return text;
        if (Date.now() > until) throw new Error(`pane ${target} never matched ${re}:\n${text}`);
        await Bun.sleep(50);
      }
    };
    const cli = join(import.meta.dir, "..", "..", "..", "src", "cli", "main.ts");
    /** Joins `session` in a new window: with the test client, or (`viaCli`) with `sbx attach NAME` itself. */
    const attachIn = (window: string, session: string, viaCli = false) =>
      tmux(
        "new-window",
        "-t",
        window,
        "sh",
        "-c",
        `${viaCli ? `'${process.execPath}' '${cli}' attach demo` : `'${process.execPath}' '${term}' '${w.paths.controlSocket}' attach ${session}`}; echo "[client exited: $?]"; sleep 60`,
      );
    return { tmux, flags, waitPane, attachIn, term };
  }

  test("detach keys, a reattach that repaints, SIGTERM to the client, and the daemon gone: each leaves the terminal as it was", async () => {
    w = makeWorld();
    seedSandbox(w, "demo");
    d = await startDaemonProc(w);
    await startSandbox(w, "demo");
    const { tmux, flags, waitPane, attachIn, term } = harness();
    tmux("new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "sh", "-c", `'${process.execPath}' '${term}' '${w.paths.controlSocket}' open demo sh -c '${TUI.replaceAll("'", "'\\''")}'; sleep 60`);
    await waitPane("t:0", /TUI-DRAWN/);
    expect(flags("t:0")).toBe(TUI_FLAGS);

    // 1. Ctrl-P Ctrl-Q: the modes are off again and the note is on the main screen, on a line of its own.
    tmux("send-keys", "-t", "t:0", "C-p", "C-q");
    const afterDetach = await waitPane("t:0", /sbx: detached/);
    expect(flags("t:0")).toBe(PLAIN_FLAGS);
    expect(afterDetach).toMatch(/^sbx: detached; session \S+ goes on running/m);
    expect(afterDetach).not.toContain("TUI-DRAWN");
    const [session] = (await w.client.sessions()).sessions;
    expect(session?.exitCode).toBeNull();

    // 2. Reattach with `sbx attach demo`: the program is made to repaint at this terminal's size, and its modes are on here again.
    attachIn("t:1", session!.id, true);
    await waitPane("t:1", /REPAINTED-30x100/);
    expect(flags("t:1")).toBe(TUI_FLAGS);

    // 3. The client killed (SIGTERM): it restores before it goes, and says so.
    const pid = Number(tmux("list-panes", "-t", "t:1", "-F", "#{pane_pid}").trim());
    const client = Number(Bun.spawnSync(["pgrep", "-P", String(pid), "-f", "main.ts attach"]).stdout.toString().trim());
    expect(client).toBeGreaterThan(0);
    process.kill(client, "SIGTERM");
    const afterKill = await waitPane("t:1", /\[client exited: 143\]/);
    expect(afterKill).toMatch(/^sbx: SIGTERM ended this client; session \S+ goes on running/m);
    expect(flags("t:1")).toBe(PLAIN_FLAGS);

    // 4. The daemon gone under an attached client.
    attachIn("t:2", session!.id);
    await waitPane("t:2", /REPAINTED-30x100/);
    expect(flags("t:2")).toBe(TUI_FLAGS);
    await killDaemonProc(d);
    d = undefined;
    await waitPane("t:2", /\[client exited: \d+\]/);
    expect(flags("t:2")).toBe(PLAIN_FLAGS);
  }, 60_000);

  test("a program that draws in the main screen (cursor hidden inside its box): the note goes below the box, not over it", async () => {
    w = makeWorld();
    seedSandbox(w, "demo");
    d = await startDaemonProc(w);
    await startSandbox(w, "demo");
    const { tmux, flags, waitPane, term } = harness();
    const inline = `printf '\\033[?25l\\033[?1000hBOX-TOP\\nBOX-MID\\nBOX-BOTTOM\\033[2A\\033[3G'; while :; do sleep 0.1; done`;
    tmux("new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "sh", "-c", `'${process.execPath}' '${term}' '${w.paths.controlSocket}' open demo sh -c '${inline.replaceAll("'", "'\\''")}'; sleep 60`);
    await waitPane("t:0", /BOX-BOTTOM/);
    expect(flags("t:0")).toBe("0 0 1 0 1 0 0 0");
    tmux("send-keys", "-t", "t:0", "C-p", "C-q");
    await waitPane("t:0", /sbx: detached/);
    expect(flags("t:0")).toBe(PLAIN_FLAGS);
    // The note goes on the screen's last row: lines above may scroll into the history (-S), none is drawn over.
    const pane = tmux("capture-pane", "-p", "-J", "-S", "-100", "-t", "t:0");
    expect(pane).toMatch(/^BOX-TOP\nBOX-MID\nBOX-BOTTOM\n/m);
    expect(pane).toMatch(/^sbx: detached; session \S+ goes on running/m);
  }, 60_000);
});
