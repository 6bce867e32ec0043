// A piped command's exit code is handed back only after its output is written out (main exits the process right after; a full pipe would lose the tail).
import { describe, expect, test } from "bun:test";
import { runPiped } from "../../../src/client/piped";
import { FakeExec } from "../../fakes/exec";

describe("runPiped", () => {
  test("waits for io.flush before returning the exit code", async () => {
    const exec = new FakeExec().expect(["docker", "exec", "c", "cmd"], { stdout: "out", exitCode: 4 });
    const events: string[] = [];
    let release: () => void = () => {};
    const flushed = new Promise<void>((r) => (release = r));
    const running = runPiped(exec, ["docker", "exec", "c", "cmd"], {
      stdout: (s) => void events.push(`out:${s}`),
      stderr: () => {},
      flush: async () => {
        events.push("flush");
        await flushed;
        events.push("flushed");
      },
    }).then((code) => {
      events.push(`exit:${code}`);
      return code;
    });
    await Bun.sleep(20);
    expect(events).not.toContain("exit:4");
    release();
    expect(await running).toBe(4);
    expect(events.slice(-2)).toEqual(["flushed", "exit:4"]);
  });
});
