// Invariant 11, no-terminal-injection: an interactive `sbx shell` never hands the user's real terminal to
// anything that runs in or for the sandbox; they get a PTY sbx owns, so TIOCSTI cannot type into the user's shell.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { CLI, acquireFixture, canRun, mustCreate, releaseFixture, skipReason, type Fixture } from "../docker/fixture";

const hasTmux = Bun.spawnSync(["sh", "-c", "command -v tmux"]).exitCode === 0;
const run = canRun && hasTmux;
const why = !canRun ? skipReason : "tmux is not installed";
const MARK = `424${process.pid % 10}${Date.now() % 1000}`; // unique argument of the inner process

function tmux(...args: string[]): string {
  return Bun.spawnSync(["tmux", ...args], { stdout: "pipe", stderr: "pipe" }).stdout.toString().trim();
}

async function until<T>(f: () => T | undefined, ms = 20_000): Promise<T | undefined> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = f();
    if (v !== undefined) return v;
    await Bun.sleep(100);
  }
  return f();
}

interface Proc {
  pid: number;
  argv: string[];
  /** (dev, ino) of every open fd, as "dev:ino". */
  fds: Set<string>;
}

/** Every process on the host with its argv and the files its fds point at (followed as the kernel sees them). */
function processes(): Proc[] {
  const out: Proc[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0").filter(Boolean);
      const fds = new Set<string>();
      for (const fd of readdirSync(`/proc/${d}/fd`)) {
        try {
          const st = statSync(`/proc/${d}/fd/${fd}`);
          fds.add(`${st.dev}:${st.ino}`);
        } catch {
          /* closed meanwhile */
        }
      }
      out.push({ pid: Number(d), argv, fds });
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

describe.skipIf(!run)(`no-terminal-injection${run ? "" : ` (skipped: ${why})`}`, () => {
  let f: Fixture;
  const session = `sbx-nti-${process.pid}`;
  beforeAll(() => {
    f = acquireFixture();
    mustCreate(f, "nti", { SHELL: "/bin/bash" });
  }, 120_000);
  afterAll(() => {
    tmux("kill-session", "-t", session);
    f?.sbx(["rm", "--force", "nti"]);
    releaseFixture();
  }, 60_000);

  test("the sandbox's processes and the docker client never hold the user's terminal", async () => {
    const inner = [...f.user.prefix({ SHELL: "/bin/bash", TERM: "xterm-256color" }), "bun", CLI, "shell", "nti"]
      .map((a) => `'${a.replace(/'/g, "'\\''")}'`)
      .join(" ");
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "sh", "-c", `cd '${f.repo}' && ${inner}`);
    const paneTty = tmux("display-message", "-p", "-t", session, "#{pane_tty}");
    expect(paneTty).toMatch(/^\/dev\/pts\/\d+$/);
    const st = statSync(paneTty);
    const userTerminal = `${st.dev}:${st.ino}`;

    tmux("send-keys", "-t", session, `sleep ${MARK}`, "Enter");
    const sleeper = await until(() => processes().find((p) => p.argv.length === 2 && p.argv[0] === "sleep" && p.argv[1] === MARK));
    expect(sleeper).toBeDefined();

    const all = processes();
    const holders = all.filter((p) => p.fds.has(userTerminal));
    // The user's terminal is held only by the user's own side: the pane's sh, the sbx CLI (bun), and the
    // `runuser`-style wrapper that starts it as the test user — never by docker, containerd or the sandbox.
    for (const h of holders) {
      const exe = (() => {
        try {
          return readlinkSync(`/proc/${h.pid}/exe`);
        } catch {
          return "";
        }
      })();
      expect({ pid: h.pid, argv0: h.argv[0], exe }).not.toMatchObject({ argv0: expect.stringMatching(/docker|containerd|runc|sleep/) });
      expect(exe).not.toMatch(/docker|containerd|runc/);
    }
    expect(holders.some((h) => h.argv.some((a) => a.endsWith("main.ts")))).toBe(true); // the CLI does hold it

    // The process inside the sandbox has a terminal — but not the user's.
    const inside = sleeper!;
    expect(inside.fds.has(userTerminal)).toBe(false);
    const insideTty = statSync(`/proc/${inside.pid}/fd/0`);
    expect(`${insideTty.dev}:${insideTty.ino}`).not.toBe(userTerminal);
    // And it is in another session than the user's shell, so its TIOCSTI targets its own terminal only.
    const sid = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")[3]);
    const paneShell = Number(tmux("display-message", "-p", "-t", session, "#{pane_pid}"));
    expect(sid(inside.pid)).not.toBe(sid(paneShell));

    // The docker client that carries the session (started by the daemon) is on a PTY sbx owns, not the user's.
    const dockerClients = all.filter((p) => p.argv[0]?.endsWith("docker") && p.argv.includes("exec"));
    expect(dockerClients.length).toBeGreaterThan(0);
    for (const d of dockerClients) expect(d.fds.has(userTerminal)).toBe(false);

    tmux("send-keys", "-t", session, "C-c");
    tmux("send-keys", "-t", session, "exit", "Enter");
  }, 90_000);
});
