// One word per state everywhere: the store's record (active, stopped, deleted) and the runtime's phase (running,
// stopped, absent, unknown) are said with sbx's words, by one function, so no surface says "active" or "absent".
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SANDBOX_STATES, sandboxState, stateOfListed, stateOfView, type StateFacts } from "../../../src/core/sandbox-state";

describe("sandboxState", () => {
  test.each<[StateFacts, string]>([
    [{ state: "active", phase: "running" }, "running"],
    [{ state: "stopped", phase: "running" }, "running"], // running although the store says otherwise: it runs
    [{ state: "active", phase: "stopped" }, "stopped"], // made, not started yet
    [{ state: "stopped", phase: "stopped" }, "stopped"],
    [{ state: "stopped", phase: "absent" }, "stopped"], // its container is made again at its next start
    [{ state: "active", phase: "absent" }, "stopped"],
    [{ state: "active", phase: "unknown" }, "unknown"],
    [{ state: "stopped", phase: "unknown" }, "unknown"],
    [{ state: "deleted", phase: "absent" }, "deleted"],
    [{ state: "active", phase: "stopped", stopReason: "out of memory" }, "failed"],
    [{ state: "stopped", phase: "stopped", stopReason: "out of memory" }, "stopped"], // stopped on purpose since
    [{ state: "active", phase: "stopped", guardError: "proxy did not start" }, "failed"],
    [{ state: "active", phase: "absent", creating: "in-progress" }, "creating"],
    [{ state: "stopped", phase: "absent", creating: "interrupted" }, "failed"],
    [{ state: "deleted", phase: "absent", creating: "interrupted" }, "deleted"],
  ])("%j → %s", (facts, word) => {
    expect(sandboxState(facts)).toBe(word as never);
  });

  test("every answer is one of the words; none is a store's or a runtime's own", () => {
    const states = ["active", "stopped", "deleted"] as const;
    const phases = ["running", "stopped", "absent", "unknown"] as const;
    for (const state of states)
      for (const phase of phases)
        for (const creating of [undefined, "in-progress", "interrupted"] as const) {
          const w = sandboxState({ state, phase, creating, stopReason: "x" });
          expect(SANDBOX_STATES).toContain(w);
          expect(["active", "absent"]).not.toContain(w);
        }
  });

  test("the views' adapters: a listed sandbox's reason counts only beside a stopped runtime; a view's error is its guards'", () => {
    expect(stateOfListed({ state: "active", phase: "stopped", reason: "out of memory" })).toBe("failed");
    expect(stateOfListed({ state: "active", phase: "unknown", reason: "the engine did not answer" })).toBe("unknown");
    expect(stateOfListed({ state: "active", phase: "stopped", guardError: "bridge: EADDRINUSE" })).toBe("failed");
    expect(stateOfView({ state: "active", phase: "stopped", error: "bridge: EADDRINUSE" })).toBe("failed");
    expect(stateOfView({ state: "active", phase: "running" })).toBe("running");
  });

  test("README.md lists every word", () => {
    const readme = readFileSync(join(import.meta.dir, "../../../README.md"), "utf8");
    const section = readme.slice(readme.indexOf("**Sandbox states.**"));
    for (const w of SANDBOX_STATES) expect(section).toContain(`\`${w}\``);
  });
});
