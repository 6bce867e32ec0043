// The shell line every command in a Docker sandbox starts through, run by this host's /bin/sh: a missing command is
// said as sbx says it (never the shell's `exec: x: not found`), exit 127; a present one runs with its arguments and
// exit code as given.
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { commandNotFound } from "../../../../shims/exec-frames";
import { inSandboxArgv, SESSION_PIDS, sessionHangupScript, startLine } from "../../../../src/drivers/docker/start-line";

function sh(argv: string[]) {
  const r = Bun.spawnSync(inSandboxArgv("demo-1", argv), { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

describe("the start line", () => {
  test("the one message for a missing command", () => {
    expect(commandNotFound("nosuchcmd", "demo")).toBe("sbx: nosuchcmd: command not found in sandbox demo");
  });

  test("a missing command: sbx's line on stderr, nothing else, exit 127", () => {
    const r = sh(["sbx-no-such-command", "--flag"]);
    expect(r.code).toBe(127);
    expect(r.err).toBe("sbx: sbx-no-such-command: command not found in sandbox demo-1\n");
    expect(r.out).toBe("");
  });

  test("a name the shell would read (%, quotes, spaces) is shown as typed", () => {
    const r = sh(["no such %s 'cmd'"]);
    expect(r.code).toBe(127);
    expect(r.err).toBe("sbx: no such %s 'cmd': command not found in sandbox demo-1\n");
  });

  test("a present command runs with its arguments as given and its exit code comes back", () => {
    const r = sh(["sh", "-c", 'printf "%s|" "$@"; exit 3', "x", "a b", "$HOME", "*"]);
    expect(r.code).toBe(3);
    expect(r.out).toBe("a b|$HOME|*|");
  });

  test("a path to a program runs; the line names the sandbox", () => {
    expect(sh(["/bin/echo", "hi"]).out).toBe("hi\n");
    expect(startLine("demo-1")).toContain("command not found in sandbox demo-1");
  });
});

describe("a terminal's TERM the sandbox has no terminfo for", () => {
  const withTerm = (term: string, home: string, tty = true) => {
    const r = Bun.spawnSync(inSandboxArgv("demo-1", ["sh", "-c", 'printf %s "$TERM"'], { tty }), { stdout: "pipe", stderr: "pipe", env: { TERM: term, HOME: home, PATH: "/usr/bin:/bin" } });
    return { term: r.stdout.toString(), err: r.stderr.toString() };
  };

  test("falls back to xterm-256color, and says so on the terminal", () => {
    expect(withTerm("sbx-no-such-term", "/nonexistent")).toEqual({
      term: "xterm-256color",
      err: "sbx: TERM=sbx-no-such-term is not known in this sandbox; using xterm-256color (add its terminfo to the image to keep it)\r\n",
    });
  });

  test("a known TERM (the system's, or one in ~/.terminfo) is kept, silently; dumb and empty are left alone", () => {
    expect(withTerm("xterm-256color", "/nonexistent")).toEqual({ term: "xterm-256color", err: "" });
    const home = mkdtempSync(join(tmpdir(), "sbx-terminfo-"));
    try {
      mkdirSync(join(home, ".terminfo", "s"), { recursive: true });
      writeFileSync(join(home, ".terminfo", "s", "sbx-own-term"), "");
      expect(withTerm("sbx-own-term", home)).toEqual({ term: "sbx-own-term", err: "" });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
    expect(withTerm("dumb", "/nonexistent")).toEqual({ term: "dumb", err: "" });
  });

  test("commands without a terminal are not touched (their TERM is the caller's business)", () => {
    expect(withTerm("sbx-no-such-term", "/nonexistent", false)).toEqual({ term: "sbx-no-such-term", err: "" });
  });
});

describe("session-hangup: a Docker session's process is hung up by its id, and no other process is", () => {
  /** A session's process as the start line leaves it: its pid in DIR/<id>, SBX_SESSION=<id> in its environment. */
  function session(dir: string, id: string, envId = id): Bun.Subprocess {
    const p = Bun.spawn(["setsid", "sh", "-c", `echo $$ > '${dir}/${id}'; exec sleep 60`], { env: { PATH: "/usr/bin:/bin", SBX_SESSION: envId }, stdout: "ignore", stderr: "ignore" });
    return p;
  }
  const alive = (p: Bun.Subprocess) => p.exitCode === null && p.signalCode === null;
  async function settle(dir: string, ids: string[]) {
    for (let i = 0; i < 100 && !ids.every((id) => Bun.file(join(dir, id)).size > 0); i++) await Bun.sleep(20);
  }
  function hangUp(dir: string, ...args: string[]) {
    // In a group of its own: a script that signalled "0" would reach only itself.
    return Bun.spawnSync(["setsid", "sh", "-c", sessionHangupScript(dir), "sbx", ...args], { stdout: "pipe", stderr: "pipe" });
  }

  test("only: the named sessions get SIGHUP and their pid files go; the others run on, their files kept", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-hangup-"));
    const [a, b, c] = [session(dir, "demo-aaaaaa"), session(dir, "demo-bbbbbb"), session(dir, "demo-cccccc")];
    try {
      await settle(dir, ["demo-aaaaaa", "demo-bbbbbb", "demo-cccccc"]);
      expect(hangUp(dir, "only", "demo-aaaaaa", "demo-cccccc").exitCode).toBe(0);
      await Promise.all([a.exited, c.exited]);
      expect(a.signalCode).toBe("SIGHUP");
      expect(c.signalCode).toBe("SIGHUP");
      expect(alive(b)).toBe(true);
      expect(readdirSync(dir)).toEqual(["demo-bbbbbb"]);
    } finally {
      for (const p of [a, b, c]) p.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("except: every recorded session but the named ones (an earlier daemon's, swept at this one's first session)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-hangup-"));
    const [old1, old2, mine] = [session(dir, "demo-old111"), session(dir, "demo-old222"), session(dir, "demo-new333")];
    try {
      await settle(dir, ["demo-old111", "demo-old222", "demo-new333"]);
      hangUp(dir, "except", "demo-new333");
      await Promise.all([old1.exited, old2.exited]);
      expect([old1.signalCode, old2.signalCode]).toEqual(["SIGHUP", "SIGHUP"]);
      expect(alive(mine)).toBe(true);
    } finally {
      for (const p of [old1, old2, mine]) p.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("hostile pid files: another process's pid (a reused pid, or one the sandbox wrote), 0, 1, a group, junk: nothing is signalled", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-hangup-"));
    // A process of the sandbox that is not that session (it carries another id, or none).
    const other = session(dir, "demo-xxxxxx", "demo-elsewhere");
    const bystander = Bun.spawn(["sleep", "60"], { env: { PATH: "/usr/bin:/bin" }, stdout: "ignore" });
    try {
      await settle(dir, ["demo-xxxxxx"]);
      writeFileSync(join(dir, "demo-yyyyyy"), `${bystander.pid}\n`);
      for (const [id, v] of [["demo-zero00", "0"], ["demo-one111", "1"], ["demo-group1", `-${bystander.pid}`], ["demo-junk11", "12 34"], ["demo-octal1", "0123"]] as const) writeFileSync(join(dir, id), v);
      hangUp(dir, "except");
      await Bun.sleep(300);
      expect(alive(other)).toBe(true);
      expect(alive(bystander)).toBe(true);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      other.kill("SIGKILL");
      bystander.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the start line of a session records its own pid, which the command keeps (exec), under the session's id", async () => {
    const id = `t-${Math.random().toString(36).slice(2, 8)}`;
    const p = Bun.spawn(inSandboxArgv("demo-1", ["sleep", "60"], { session: id }), { env: { PATH: "/usr/bin:/bin", SBX_SESSION: id }, stdout: "ignore", stderr: "ignore" });
    const file = join(SESSION_PIDS, id);
    try {
      // The shell's `>` makes the file before echo fills it: wait for the line, not the file.
      await settle(SESSION_PIDS, [id]);
      expect(readFileSync(file, "utf8").trim()).toBe(String(p.pid));
      hangUp(SESSION_PIDS, "only", id);
      await p.exited;
      expect(p.signalCode).toBe("SIGHUP");
    } finally {
      p.kill("SIGKILL");
      rmSync(file, { force: true });
    }
  });
});
