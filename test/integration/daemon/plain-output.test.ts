// plain-output: a session whose output goes to a pipe or a file is told so by the conventions (NO_COLOR=1, TERM=dumb,
// no COLORTERM or FORCE_COLOR), so a program that colours by its environment writes no escape codes there; to a
// terminal it colours as before, and a FORCE_COLOR the person set keeps colour in the pipe. The real CLI (`sbx exec`)
// against the real daemon (test entry: its fake kind runs commands on this host), in each of the three places the
// session's environment is made: a command with no terminal, and a terminal session whose output is a file.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { CLI, type DaemonProc, killDaemonProc, makeWorld, seedSandbox, startDaemonProc, startSandbox, type World } from "../../support/daemon-proc";

let w: World;
let d: DaemonProc | undefined;
afterEach(async () => {
  await killDaemonProc(d);
  d = undefined;
  w?.cleanup();
});

/** Colours exactly when its environment says it may (as chalk, git or rich decide), and says what it saw. */
const PROG = 'if [ -n "$NO_COLOR" ] || [ "$TERM" = dumb ]; then echo "plain TERM=$TERM NO_COLOR=$NO_COLOR COLORTERM=${COLORTERM-unset}"; else printf "\\033[32mcolour TERM=%s\\033[0m\\n" "$TERM"; fi';

/** A world with a running sandbox `demo` of a real repo, and the environment of a person's colour terminal. */
async function world(): Promise<{ repo: string; env: Record<string, string> }> {
  w = makeWorld();
  const repo = join(w.root, "repo");
  mkdirSync(repo);
  Bun.spawnSync(["git", "init", "-q", repo]);
  seedSandbox(w, "demo", undefined, realpathSync(repo));
  d = await startDaemonProc(w);
  await startSandbox(w, "demo");
  const { NO_COLOR: _, ...env } = w.env;
  return { repo, env: { ...env, TERM: "xterm-256color", COLORTERM: "truecolor" } };
}

/** `sbx exec demo -- sh -c PROG` with stdin and stdout as given: "pipe" both, or under a PTY with stdout to a file or the PTY. */
async function execProg(repo: string, env: Record<string, string>, how: "pipes" | "pty-to-file" | "pty"): Promise<string> {
  const cli = [process.execPath, CLI, "exec", "demo", "--", "sh", "-c", PROG];
  if (how === "pipes") {
    const p = Bun.spawn(cli, { cwd: repo, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    if (code !== 0) throw new Error(`sbx exec exited ${code}: ${err}`);
    return out;
  }
  const file = join(w.root, `out-${Math.random().toString(36).slice(2)}`);
  const q = (a: string) => `'${a.replace(/'/g, "'\\''")}'`;
  let screen = "";
  const p = Bun.spawn(["sh", "-c", `${cli.map(q).join(" ")}${how === "pty-to-file" ? ` > ${q(file)}` : ""}`], {
    cwd: repo,
    env,
    terminal: { cols: 100, rows: 30, data: (_t: unknown, b: Uint8Array) => void (screen += new TextDecoder().decode(b)) },
  });
  const code = await p.exited;
  if (code !== 0) throw new Error(`sbx exec exited ${code}: ${screen}`);
  return how === "pty-to-file" ? readFileSync(file, "utf8") : screen;
}

describe("plain-output: no colour codes where the output is not a terminal", () => {
  test("no terminal at all (a pipe): the program sees NO_COLOR=1 and TERM=dumb, no COLORTERM; nothing escaped in the output", async () => {
    const { repo, env } = await world();
    const out = await execProg(repo, env, "pipes");
    expect(out).toBe("plain TERM=dumb NO_COLOR=1 COLORTERM=unset\n");
    expect(out).not.toContain("\x1b");
  }, 60_000);

  test("a terminal session whose output goes to a file (`sbx exec … > out.txt` at a terminal): plain there too", async () => {
    const { repo, env } = await world();
    const out = await execProg(repo, env, "pty-to-file");
    expect(out).toContain("plain TERM=dumb NO_COLOR=1 COLORTERM=unset");
    expect(out).not.toContain("\x1b[32m");
  }, 60_000);

  test("output to a terminal: colour as the person's terminal says", async () => {
    const { repo, env } = await world();
    const out = await execProg(repo, env, "pty");
    expect(out).toContain("\x1b[32mcolour TERM=xterm-256color\x1b[0m");
  }, 60_000);

  test("FORCE_COLOR set by the person: their colour stays, even in a pipe (FORCE_COLOR=0 is no colour, as ever)", async () => {
    const { repo, env } = await world();
    // The program above goes by NO_COLOR and TERM; FORCE_COLOR=1 leaves both as the terminal has them.
    expect(await execProg(repo, { ...env, FORCE_COLOR: "1" }, "pipes")).toBe("\x1b[32mcolour TERM=xterm-256color\x1b[0m\n");
    expect(await execProg(repo, { ...env, FORCE_COLOR: "0" }, "pipes")).toBe("plain TERM=dumb NO_COLOR=1 COLORTERM=unset\n");
  }, 60_000);
});
