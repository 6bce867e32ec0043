// The shell line every command in a Docker sandbox starts through, run by this host's /bin/sh: a missing command is
// said as sbx says it (never the shell's `exec: x: not found`), exit 127; a present one runs with its arguments and
// exit code as given.
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { commandNotFound } from "../../../../shims/exec-frames";
import { inSandboxArgv, startLine } from "../../../../src/drivers/docker/start-line";

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
