// bounded: what a sandbox makes its guards write to the daemon's log (a refused handoff, a dropped agent connection,
// each once per try) is budgeted per sandbox: a burst, then a line a second, and one line that says how many were held
// back. Another sandbox's lines, and the daemon's own, are not held.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LOG_LINES_BURST } from "../../../src/core/bounds";
import { Controller } from "../../../src/daemon/controller";
import { createLogger } from "../../../src/daemon/log";
import { defaultSpecBuilder } from "../../../src/daemon/spec";
import type { SandboxGuard } from "../../../src/guards/guards";
import { Store } from "../../../src/store/store";
import { readEnv } from "../../../src/sys/env";
import { createExec } from "../../../src/sys/exec";
import { pathsFor } from "../../../src/sys/paths";
import { FakeBackend } from "../../fakes/backend";

let root = "";
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("bounded: the daemon's log", () => {
  test("a sandbox's guards writing 10,000 lines write a burst and one held-back line; another sandbox's all go", async () => {
    root = mkdtempSync(join(tmpdir(), "sbx-glog-"));
    const env = readEnv({ vars: { HOME: join(root, "home"), XDG_RUNTIME_DIR: join(root, "rt"), XDG_STATE_HOME: join(root, "state"), XDG_CACHE_HOME: join(root, "cache"), PATH: process.env.PATH }, uid: process.getuid!(), gid: process.getgid!(), platform: "linux" });
    const paths = pathsFor(env);
    const lines: string[] = [];
    const log = createLogger((l) => void lines.push(l), "debug");
    const store = new Store(":memory:");
    const noisy: SandboxGuard = {
      name: "noisy",
      async start(ctx) {
        const n = ctx.sandbox.name === "abuser" ? 10_000 : 20;
        for (let i = 0; i < n; i++) ctx.log.warn("refused a listener handed over on listen.sock", { why: `try ${i}` });
        return { health: () => ({ ok: true, detail: "" }), stop: async () => {} };
      },
    };
    const controller = new Controller({ store, backends: { fake: new FakeBackend() }, guards: [noisy], exec: createExec({ PATH: process.env.PATH ?? "" }), paths, log, specFor: defaultSpecBuilder(env, paths) });
    const a = store.createSandbox({ name: "abuser", repo: "/r", backend: "fake" });
    const b = store.createSandbox({ name: "other", repo: "/r", backend: "fake" });
    await controller.start({ name: "abuser" });
    await controller.start({ name: "other" });
    const abuser = lines.filter((l) => l.includes("sandbox=abuser") && l.includes("listen.sock"));
    expect(abuser.length).toBe(LOG_LINES_BURST);
    expect(lines.filter((l) => l.includes("sandbox=other") && l.includes("listen.sock")).length).toBe(20);
    // The next line of the abuser's (a second later) says how many were held back first.
    await Bun.sleep(1100);
    await controller.close();
    const held = lines.filter((l) => l.includes("sandbox=abuser") && l.includes("held back"));
    expect(held.length).toBe(1);
    expect(held[0]).toContain(`${10_000 - LOG_LINES_BURST}`);
    store.close();
  });
});
