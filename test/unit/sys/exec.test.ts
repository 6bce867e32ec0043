// The real executor runs argv without a shell and reports failures with argv, exit code and stderr; the fake refuses surprises.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createExec, ExecError, runAttached, spawnDetached } from "../../../src/sys/exec";
import { FakeExec, UnexpectedCallError } from "../../fakes/exec";

const exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });

describe("createExec", () => {
  test("captures stdout and exit code", async () => {
    const r = await exec.run(["sh", "-c", "printf hello; exit 0"]);
    expect(r.stdout).toBe("hello");
    expect(r.exitCode).toBe(0);
  });

  test("arguments are passed as-is, never through a shell", async () => {
    const r = await exec.run(["printf", "%s", "$(echo injected); rm -rf /"]);
    expect(r.stdout).toBe("$(echo injected); rm -rf /");
  });

  test("a non-zero exit throws ExecError carrying argv, code and stderr", async () => {
    const err = await exec.run(["sh", "-c", "echo boom >&2; exit 3"]).catch((e) => e);
    expect(err).toBeInstanceOf(ExecError);
    expect(err.commandExitCode).toBe(3);
    expect(err.stderr).toContain("boom");
    expect(err.argv).toEqual(["sh", "-c", "echo boom >&2; exit 3"]);
    expect(err.message).toContain("exited 3");
  });

  test("check:false returns the failure instead", async () => {
    const r = await exec.run(["sh", "-c", "exit 7"], { check: false });
    expect(r.exitCode).toBe(7);
  });

  test("a missing program is exit 127 with a hint", async () => {
    const err = await exec.run(["sbx-no-such-program-xyz"]).catch((e) => e);
    expect(err).toBeInstanceOf(ExecError);
    expect(err.commandExitCode).toBe(127);
    expect(err.hint).toContain("installed");
  });

  test("stdin may be a stream, consumed as it arrives", async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode("part one, "));
        c.enqueue(new TextEncoder().encode("part two"));
        c.close();
      },
    });
    expect((await exec.run(["cat"], { stdin: stream })).stdout).toBe("part one, part two");
  });

  test("stdin is delivered", async () => {
    const r = await exec.run(["cat"], { stdin: "from stdin" });
    expect(r.stdout).toBe("from stdin");
  });

  test("env: merged over the base by default, alone with replaceEnv", async () => {
    const merged = await exec.run(["sh", "-c", 'echo "$PATH|$EXTRA"'], { env: { EXTRA: "x" } });
    expect(merged.stdout.trim()).toBe(`${process.env.PATH}|x`);
    const alone = await exec.run(["/usr/bin/env"], { env: { ONLY: "1" }, replaceEnv: true });
    expect(alone.stdout.trim()).toBe("ONLY=1");
  });

  test("onStderr sees progress as it arrives", async () => {
    const seen: string[] = [];
    await exec.run(["sh", "-c", "echo step1 >&2; echo step2 >&2"], { onStderr: (s) => seen.push(s) });
    expect(seen.join("")).toBe("step1\nstep2\n");
  });

  test("timeout kills the command", async () => {
    const t = performance.now();
    const r = await exec.run(["sleep", "120"], { timeoutMs: 200, check: false });
    expect(r.exitCode).not.toBe(0);
    expect(performance.now() - t).toBeLessThan(60_000); // killed, not run to its end
  });

  test("terminal runs under a PTY sbx owns", async () => {
    let out = "";
    const p = exec.terminal(["sh", "-c", "test -t 0 && echo is-a-tty; stty size; exit 4"], {
      cols: 91,
      rows: 17,
      onData: (d) => (out += new TextDecoder().decode(d)),
    });
    expect(await p.exited).toBe(4);
    await Bun.sleep(50);
    expect(out).toContain("is-a-tty");
    expect(out).toContain("17 91");
  });
});

describe("runAttached", () => {
  test("the command's exit code (128 + the signal's number when one ended it), its environment only what it is given", async () => {
    expect(await runAttached(["sh", "-c", 'test "$X" = y && test -z "$HOME" && exit 3'], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", X: "y" } })).toBe(3);
    expect(await runAttached(["sh", "-c", "kill -TERM $$"], { env: { PATH: "/usr/bin:/bin" } })).toBe(143);
  });

  test("a program that does not exist is an ExecError (127), and no signal handler is left behind", async () => {
    const before = process.listenerCount("SIGINT");
    const e = await runAttached(["/nonexistent/sbx-x"], { env: {} }).then(() => null, (x: unknown) => x);
    expect(e).toBeInstanceOf(ExecError);
    expect((e as ExecError).commandExitCode).toBe(127);
    await runAttached(["true"], { env: { PATH: "/usr/bin:/bin" } });
    expect(process.listenerCount("SIGINT")).toBe(before);
  });
});

describe("spawnDetached", () => {
  test("runs in its own session with only the given env, output appended to a 0600 log, not waited for", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-detached-"));
    try {
      const log = join(dir, "out.log");
      // Field 6 of /proc/<pid>/stat is the session id: a session leader's equals its own pid.
      const p = spawnDetached(["sh", "-c", 'echo "pid=$$ sid=$(cut -d" " -f6 /proc/$$/stat) home=${HOME-unset} x=$X"; echo to-stderr >&2'], {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", X: "given" },
        logFile: log,
      });
      expect(await p.exited).toBe(0);
      const out = readFileSync(log, "utf8");
      expect(out).toContain(`pid=${p.pid} sid=${p.pid} home=unset x=given`);
      expect(out).toContain("to-stderr");
      expect(statSync(log).mode & 0o777).toBe(0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a missing program is an ExecError with exit 127", () => {
    let err: unknown;
    try {
      spawnDetached(["/nonexistent/sbx-no-such-program"], { env: {} });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ExecError);
    expect((err as ExecError).commandExitCode).toBe(127);
  });
});

describe("FakeExec", () => {
  test("answers scripted calls and records them", async () => {
    const f = new FakeExec().expect(["git", "--version"], { stdout: "git version 2.39.5\n" });
    expect((await f.run(["git", "--version"])).stdout).toContain("2.39.5");
    expect(f.calls.map((c) => c.argv)).toEqual([["git", "--version"]]);
    f.assertDone();
  });

  test("fails on an unexpected call, even if the caller swallows it", async () => {
    const f = new FakeExec();
    await f.run(["rm", "-rf", "/"]).catch(() => undefined);
    expect(f.unexpected).toBeInstanceOf(UnexpectedCallError);
    expect(() => f.assertDone()).toThrow(/unexpected call/);
  });

  test("fails when an expected call was not made", () => {
    const f = new FakeExec().expect(["docker", "info"]);
    expect(() => f.assertDone()).toThrow(/not made/);
  });

  test("scripted failures throw ExecError unless check:false", async () => {
    const f = new FakeExec().always(["docker", "inspect", "x"], { exitCode: 1, stderr: "No such object" });
    expect(await f.run(["docker", "inspect", "x"]).catch((e) => e)).toBeInstanceOf(ExecError);
    expect((await f.run(["docker", "inspect", "x"], { check: false })).exitCode).toBe(1);
  });

  test("expectations answer a fixed number of times; predicates match", async () => {
    const f = new FakeExec().expect((a) => a[0] === "id", { stdout: "1" }, 2);
    await f.run(["id", "-u"]);
    await f.run(["id", "-g"]);
    await expect(f.run(["id", "-n"])).rejects.toBeInstanceOf(UnexpectedCallError);
  });

  test("transcript quotes what a shell would need quoted", async () => {
    const f = new FakeExec().always(() => true);
    await f.run(["echo", "a b", "plain"]);
    expect(f.transcript()).toBe('echo "a b" plain\n');
  });
});

describe("streaming", () => {
  test("onStdout sees output as it arrives and it is still captured", async () => {
    const seen: string[] = [];
    const r = await exec.run(["sh", "-c", "echo a; echo b"], { onStdout: (s) => seen.push(s) });
    expect(seen.join("")).toBe("a\nb\n");
    expect(r.stdout).toBe("a\nb\n");
  });
});
