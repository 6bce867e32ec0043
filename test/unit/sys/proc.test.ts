// Stopping a process sbx started: SIGTERM, a bounded wait, then SIGKILL; reaped or not, a gone process counts as gone.
import { describe, expect, test } from "bun:test";
import { pidAlive, stopProcess } from "../../../src/sys/proc";

describe("stopProcess", () => {
  test("one that ends on SIGTERM: true, and it is gone", async () => {
    const p = Bun.spawn(["sleep", "30"]);
    expect(await stopProcess(p.pid, { waitMs: 5_000 })).toBe(true);
    await p.exited;
    expect(pidAlive(p.pid)).toBe(false);
  });

  test("one that ignores SIGTERM: killed after the wait, false", async () => {
    const p = Bun.spawn(["bash", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"], { stdout: "pipe" });
    await p.stdout.getReader().read();
    expect(await stopProcess(p.pid, { waitMs: 200 })).toBe(false);
    expect(await p.exited).not.toBe(0);
    expect(p.signalCode).toBe("SIGKILL");
  });

  test("one already gone: true", async () => {
    const p = Bun.spawn(["true"]);
    await p.exited;
    expect(await stopProcess(p.pid, { waitMs: 100 })).toBe(true);
  });
});
