// `sbx secret set NAME` in a real terminal (tmux): what is typed never appears on screen, Enter stores it, Ctrl-C and an empty value store nothing, and the terminal's settings are as before every time.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..", "..");
const CLI = join(ROOT, "src", "cli", "main.ts");
const TMUX = Bun.which("tmux");
const SECRET = "sekrit-VALUE-9f3a";

let root: string | undefined;
let socket: string | undefined;
afterEach(() => {
  // Our own tmux server only (its private socket), never anyone else's.
  if (socket) Bun.spawnSync([TMUX!, "-S", socket, "kill-server"], { stderr: "ignore" });
  if (root) rmSync(root, { recursive: true, force: true });
  root = socket = undefined;
});

const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Runs `sbx secret set NAME` in a fresh tmux terminal; the shell around it reports the exit code and whether `stty -g` is unchanged. */
function terminal(name: string) {
  root = mkdtempSync(join(tmpdir(), "sbx-secret-tty-"));
  socket = join(root, "tmux.sock");
  const config = join(root, "config");
  const script = [
    `export HOME=${sh(join(root, "home"))} XDG_CONFIG_HOME=${sh(config)} XDG_STATE_HOME=${sh(join(root, "state"))} XDG_RUNTIME_DIR=${sh(join(root, "run"))} NO_COLOR=1`,
    `cd ${sh(root)}`,
    `before=$(stty -g)`,
    `${sh(process.execPath)} --no-env-file --config=/dev/null ${sh(CLI)} secret set ${name}`,
    `rc=$?`,
    `[ "$before" = "$(stty -g)" ] && echo TTY-SAME || echo TTY-CHANGED`,
    `echo EXIT=$rc`,
    `sleep 60`,
  ].join("; ");
  const tmux = (...args: string[]) => {
    const r = Bun.spawnSync([TMUX!, "-S", socket!, "-f", "/dev/null", ...args], { stderr: "pipe", stdout: "pipe" });
    if (r.exitCode !== 0) throw new Error(`tmux ${args.join(" ")}: ${r.stderr.toString()}`);
    return r.stdout.toString();
  };
  tmux("new-session", "-d", "-s", "t", "-x", "200", "-y", "20", `sh -c ${sh(script)}`);
  const screen = () => tmux("capture-pane", "-p", "-t", "t");
  const waitFor = async (text: string) => {
    const until = Date.now() + 15_000;
    while (!screen().includes(text)) {
      if (Date.now() > until) throw new Error(`timed out waiting for ${JSON.stringify(text)}; screen:\n${screen()}`);
      await Bun.sleep(50);
    }
    return screen();
  };
  return {
    type: (s: string) => tmux("send-keys", "-t", "t", "-l", s),
    key: (k: string) => tmux("send-keys", "-t", "t", k),
    waitFor,
    stored: () => {
      const f = join(config, "sbx", "secrets.json");
      return existsSync(f) ? (JSON.parse(readFileSync(f, "utf8")) as Record<string, string>) : {};
    },
  };
}

describe.skipIf(!TMUX)(`sbx secret set at a real terminal${TMUX ? "" : " (skipped: no tmux on PATH)"}`, () => {
  test("the typed value never appears on screen; Enter stores it; the terminal is as before", async () => {
    const t = terminal("GH_TOKEN");
    await t.waitFor("value for GH_TOKEN");
    t.type(SECRET);
    await Bun.sleep(200);
    t.key("Enter");
    const screen = await t.waitFor("EXIT=");
    expect(screen).toMatch(/stored GH_TOKEN in \S+secrets\.json \(17 characters/);
    expect(screen).toContain("TTY-SAME");
    expect(screen).toContain("EXIT=0");
    expect(screen).not.toContain(SECRET);
    expect(screen).not.toContain("sekrit");
    expect(t.stored()).toEqual({ GH_TOKEN: SECRET });
  }, 30_000);

  test("Ctrl-C after typing stores nothing, restores the terminal and exits 130", async () => {
    const t = terminal("GH_TOKEN");
    await t.waitFor("value for GH_TOKEN");
    t.type("half-typed");
    await Bun.sleep(200);
    t.key("C-c");
    const screen = await t.waitFor("EXIT=");
    expect(screen).toContain("cancelled: GH_TOKEN was not stored");
    expect(screen).toContain("TTY-SAME");
    expect(screen).toContain("EXIT=130");
    expect(screen).not.toContain("half-typed");
    expect(t.stored()).toEqual({});
  }, 30_000);

  test("Enter on nothing is refused with what to do (exit 64), terminal restored", async () => {
    const t = terminal("GH_TOKEN");
    await t.waitFor("value for GH_TOKEN");
    t.key("Enter");
    const screen = await t.waitFor("EXIT=");
    expect(screen).toContain("empty value: GH_TOKEN was not stored");
    expect(screen).toContain("hint:");
    expect(screen).toContain("TTY-SAME");
    expect(screen).toContain("EXIT=64");
    expect(t.stored()).toEqual({});
  }, 30_000);
});
