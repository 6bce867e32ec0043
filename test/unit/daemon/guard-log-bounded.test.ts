// bounded: what a sandbox makes its guards write to the daemon's log (a refused handoff, a dropped agent connection,
// each once per try) is budgeted per sandbox: a burst, then a line a second, and one line that says how many were held
// back. Another sandbox's lines, and the daemon's own, are not held.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LOG_LINES_BURST } from "../../../src/core/bounds";
import type { SandboxSpec } from "../../../src/core/spec";
import { GuardHost } from "../../../src/daemon/guard-host";
import type { Driver } from "../../../src/drivers/driver";
import type { SandboxGuard } from "../../../src/guards/guards";
import { createLogger } from "../../../src/sys/log";
import { Store } from "../../../src/store/store";
import { readEnv } from "../../../src/sys/env";
import { createExec } from "../../../src/sys/exec";
import { pathsFor } from "../../../src/sys/paths";

let root = "";
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("bounded: the daemon's log", () => {
  test("a sandbox's guards writing 10,000 lines write a burst and one held-back line; another sandbox's all go", async () => {
    root = mkdtempSync(join(tmpdir(), "sbx-glog-"));
    const env = readEnv({ vars: { HOME: join(root, "home"), XDG_RUNTIME_DIR: join(root, "rt"), XDG_STATE_HOME: join(root, "state"), XDG_CACHE_HOME: join(root, "cache"), PATH: process.env.PATH }, uid: process.getuid!(), gid: process.getgid!(), platform: "linux" });
    const paths = pathsFor(env);
    const lines: string[] = [];
    // What the guard host reads of a spec: its id and its socket dir (the guard here uses nothing else).
    const specOf = (id: string) => ({ id, sockets: { dir: join(paths.runtimeDir, "sb", id), proxy: "", bridge: "" } }) as unknown as SandboxSpec;
    const log = createLogger((l: string) => void lines.push(l), "debug");
    const store = new Store(":memory:");
    const noisy: SandboxGuard = {
      name: "noisy",
      async start(ctx) {
        const n = ctx.sandbox.name === "abuser" ? 10_000 : 20;
        for (let i = 0; i < n; i++) ctx.log.warn("refused a listener handed over on listen.sock", { why: `try ${i}` });
        return { health: () => ({ ok: true, detail: "" }), stop: async () => {} };
      },
    };
    const host = new GuardHost({ store, guards: [noisy], exec: createExec({ PATH: process.env.PATH ?? "" }), paths, log });
    const a = store.createSandbox({ name: "abuser", repo: "/r", backend: "fake" });
    const b = store.createSandbox({ name: "other", repo: "/r", backend: "fake" });
    await host.up(a, specOf("aaaaaaaaaaaa"), {} as Driver);
    await host.up(b, specOf("bbbbbbbbbbbb"), {} as Driver);
    const abuser = lines.filter((l) => l.includes("sandbox=abuser") && l.includes("listen.sock"));
    expect(abuser.length).toBe(LOG_LINES_BURST);
    expect(lines.filter((l) => l.includes("sandbox=other") && l.includes("listen.sock")).length).toBe(20);
    // The next line of the abuser's (a second later) says how many were held back first.
    await Bun.sleep(1100);
    await host.close();
    const held = lines.filter((l) => l.includes("sandbox=abuser") && l.includes("held back"));
    expect(held.length).toBe(1);
    expect(held[0]).toContain(`${10_000 - LOG_LINES_BURST}`);
    store.close();
  });
});
