// sbx attach [SESSION|NAME]: which running session a word means (an id, a sandbox running exactly one, or the only
// one), and errors that list the candidates instead of guessing.
import { describe, expect, test } from "bun:test";
import { pickSession } from "../../../src/cli/commands/attach";
import type { SessionView } from "../../../src/daemon/protocol";

const s = (id: string, sandbox: string, exitCode: number | null = null, argv: string[] = []): SessionView => ({
  id, sandbox, repo: "/r", argv: argv.length ? ["/bin/sh", "-c", "launcher", ...argv] : [], command: argv, pid: 1, clients: 0, startedAt: 0, cols: 80, rows: 24, exitCode,
});

describe("sbx attach: the session a word means", () => {
  test("an id; else a sandbox running one session; ended sessions never", () => {
    const all = [s("demo-aa11", "demo"), s("work-bb22", "work", null, ["claude"]), s("work-cc33", "work", 0)];
    expect(pickSession(all, "work-bb22").id).toBe("work-bb22");
    expect(pickSession(all, "demo").id).toBe("demo-aa11");
    expect(pickSession(all, "work").id).toBe("work-bb22");
    expect(() => pickSession(all, "work-cc33")).toThrow(/no running session 'work-cc33'/);
  });

  test("an id wins over a sandbox that happens to share the word", () => {
    expect(pickSession([s("x", "y"), s("z", "x")], "x").id).toBe("x");
  });

  test("a sandbox with two sessions is not guessed: both are listed", () => {
    try {
      pickSession([s("w-1", "w", null, ["claude"]), s("w-2", "w")], "w");
      throw new Error("picked one");
    } catch (e) {
      expect((e as Error).message).toContain("runs 2 sessions");
      expect((e as { hint?: string }).hint).toContain("w-1 (w: claude), w-2 (w: shell)");
    }
  });

  test("no word: the only running session; none or several is an error that says what to do", () => {
    expect(pickSession([s("a-1", "a"), s("b-1", "b", 3)], undefined).id).toBe("a-1");
    expect(() => pickSession([], undefined)).toThrow(/no session is running/);
    expect(() => pickSession([s("a-1", "a"), s("b-1", "b")], undefined)).toThrow(/2 sessions are running/);
  });

  test("an unknown word names the running ones", () => {
    try {
      pickSession([s("a-1", "a")], "nope");
      throw new Error("picked one");
    } catch (e) {
      expect((e as { hint?: string }).hint).toContain("a-1 (a: shell)");
    }
  });
});
