// A stop or rm that would end open sessions: a person at a terminal is asked first; --force, or no terminal, ends them.
import { describe, expect, test } from "bun:test";
import { SbxError, sessionsAttached } from "../../../src/core/errors";
import { endingSessions } from "../../../src/client/sandboxes";

function daemon(open: number) {
  const calls: string[] = [];
  return {
    calls,
    call: async (ifSessions: "end" | "refuse") => {
      calls.push(ifSessions);
      if (ifSessions === "refuse" && open > 0) throw sessionsAttached("w", open, "stop");
      return { sessions: ifSessions === "end" ? open : 0 };
    },
  };
}

const asker = (answer: string | null) => {
  const asked: string[] = [];
  return { asked, ask: async (q: string) => (asked.push(q), answer) };
};

describe("ending sessions", () => {
  test("at a terminal, the person is asked; yes ends them", async () => {
    const d = daemon(2);
    const a = asker("y");
    expect(await endingSessions({ stdinIsTTY: true, ask: a.ask }, "stop", "w", false, d.call)).toEqual({ sessions: 2 });
    expect(a.asked).toEqual(["sandbox w has 2 open sessions. End them and stop w? [y/N] "]);
    expect(d.calls).toEqual(["refuse", "end"]);
  });

  test("anything but yes (or no answer at all) keeps them open, and says how to end them anyway", async () => {
    for (const answer of ["", "n", "no", null, "yess"]) {
      const d = daemon(1);
      const err = await endingSessions({ stdinIsTTY: true, ask: asker(answer).ask }, "rm", "w", false, d.call).then(() => null, (e: unknown) => e as SbxError);
      expect(err?.message).toBe("sandbox w was not removed: its sessions stay open");
      expect(err?.hint).toContain("sbx rm --force w");
      expect(d.calls).toEqual(["refuse"]);
    }
  });

  test("no question when none are open, with --force, or with no terminal to ask at", async () => {
    const a = asker("n");
    expect(await endingSessions({ stdinIsTTY: true, ask: a.ask }, "stop", "w", false, daemon(0).call)).toEqual({ sessions: 0 });
    expect(await endingSessions({ stdinIsTTY: true, ask: a.ask }, "stop", "w", true, daemon(3).call)).toEqual({ sessions: 3 });
    expect(await endingSessions({ stdinIsTTY: false, ask: a.ask }, "stop", "w", false, daemon(3).call)).toEqual({ sessions: 3 });
    expect(a.asked).toEqual([]);
  });

  test("another refusal (unsynced work) is not taken for open sessions", async () => {
    const call = async () => {
      throw new SbxError("unsynced_commits", "holds commits");
    };
    await expect(endingSessions({ stdinIsTTY: true, ask: asker("y").ask }, "rm", "w", false, call)).rejects.toThrow("holds commits");
  });
});
