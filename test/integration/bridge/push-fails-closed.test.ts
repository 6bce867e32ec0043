// A push fails closed when the bridge fails or dies between starting the gate's push and its verdict: refused within a bound, nothing reaches the upstream, no push left waiting.
import { NO_BRIDGE_SETTINGS } from "../../../src/core/bridge-settings";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startBridge, type StartedBridge } from "../../../src/bridge/server";
import { createExec } from "../../../src/sys/exec";
import { commitOn, git, makeHarness, refIn, sh, SHIMS, type Harness } from "./harness";

const PATH = process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin";
let h: Harness;
beforeAll(async () => {
  h = await makeHarness();
});
afterAll(async () => {
  await h.stop();
});

/** Processes (pid, argv) whose argv contains `needle`. */
function processesWith(needle: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      if (argv.includes(needle)) out.push([pid, argv]);
    } catch {}
  }
  return out;
}

const receivePosts = () => h.upstream.requests.filter((q) => q.method === "POST" && q.path.endsWith("git-receive-pack")).length;

describe("a push fails closed when the bridge fails before the verdict", () => {
  test("the bridge's end of the FIFO gone before the hook opened it (and the push code failing): refused, upstream unchanged", async () => {
    const socket = join(h.root, "seam", "bridge.sock");
    let hit = 0;
    const bridge: StartedBridge = await startBridge({
      settings: () => ({ ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"] }), // pushes by plain branch names; the prefix has its own test
      socketPath: socket,
      sandbox: { id: "sbx-seam", name: "seam", workspace: h.clone, repo: h.host },
      gateDir: join(h.root, "gate-seam"),
      secrets: () => ({ GIT_TOKEN: h.token }),
      audit: () => undefined,
      exec: createExec({ PATH }),
      path: PATH,
      faults: {
        afterPushStarted: async (v) => {
          hit++;
          // What the bridge dying does to its end, then a failure: no verdict is ever written.
          const { closeSync } = await import("node:fs");
          closeSync(v.fd);
          (v as { fd: number }).fd = -1; // closed here; the bridge must not close a number something else may reuse
          throw new Error("injected failure before the verdict");
        },
      },
    });
    try {
      await git(h.clone, "checkout", "-q", "main");
      await commitOn(h.clone, "seamed", { "clean.txt": "nothing secret\n" });
      const posts = receivePosts();
      const r = await sh([join(SHIMS, "git"), "push", "origin", "seamed"], { cwd: h.clone, env: { ...h.sandboxEnv, SBX_BRIDGE_SOCKET: socket } });
      expect(hit).toBe(1);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("injected failure before the verdict");
      expect(await refIn(h.upstreamRepo, "refs/heads/seamed")).toBe("");
      expect(receivePosts()).toBe(posts);
    } finally {
      await bridge.close();
    }
  }, 20_000);

  test("the bridge process killed right after it started the gate's push: the shim says so, the push never reaches the upstream and does not hang", async () => {
    const socket = join(h.root, "child", "bridge.sock");
    const gateDir = join(h.root, "gate-child");
    const child = Bun.spawn([process.execPath, join(import.meta.dir, "bridge-child.ts"), JSON.stringify({ socket, clone: h.clone, host: h.host, gateDir, token: h.token, path: PATH })], {
      stdout: "pipe",
      stderr: "inherit",
      env: { PATH },
    });
    try {
      const reader = child.stdout.getReader();
      const first = await reader.read();
      expect(new TextDecoder().decode(first.value)).toBe("ready\n");
      reader.releaseLock();
      await git(h.clone, "checkout", "-q", "main");
      await commitOn(h.clone, "orphaned", { "clean2.txt": "nothing secret either\n" });
      const posts = receivePosts();
      const r = await sh([join(SHIMS, "git"), "push", "origin", "orphaned"], { cwd: h.clone, env: { ...h.sandboxEnv, SBX_BRIDGE_SOCKET: socket } });
      expect(await child.exited).toBe(137);
      expect(r.code).toBe(69);
      expect(r.stderr).toContain("command bridge is not answering");
      // The gate's push outlives the bridge (its child, now an orphan) and is held in its hook. It must end
      // on its own, refused: poll for it to go (the test's timeout is the bound; before the fix it hung for good).
      const gatePushes = () => processesWith(gateDir).filter(([, argv]) => argv.includes(" push "));
      for (let i = 0; i < 200 && gatePushes().length > 0; i++) await Bun.sleep(50);
      expect(gatePushes()).toEqual([]);
      // And no hook is left waiting either.
      expect([...processesWith("SBX_VERDICT"), ...processesWith(join(gateDir, "hooks"))]).toEqual([]);
      expect(await refIn(h.upstreamRepo, "refs/heads/orphaned")).toBe("");
      expect(receivePosts()).toBe(posts);
      // The next bridge for this sandbox clears the dead one's FIFO and pushes normally.
      // The dead bridge's FIFOs (the push's and the spare it had made) are still there…
      expect(readdirSync(join(gateDir, "tmp")).length).toBeGreaterThan(0);
      const stale = readdirSync(join(gateDir, "tmp"));
      const next = await startBridge({ settings: () => ({ ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"] }), socketPath: socket, sandbox: { id: "sbx-child", name: "child", workspace: h.clone, repo: h.host }, gateDir, secrets: () => ({ GIT_TOKEN: h.token }), audit: () => undefined, exec: createExec({ PATH }), path: PATH });
      try {
        // …and the next bridge clears them (keeping only its own spare).
        expect(readdirSync(join(gateDir, "tmp")).filter((d) => stale.includes(d))).toEqual([]);
        const again = await sh([join(SHIMS, "git"), "push", "origin", "orphaned"], { cwd: h.clone, env: { ...h.sandboxEnv, SBX_BRIDGE_SOCKET: socket } });
        expect(again.code).toBe(0);
        expect(await refIn(h.upstreamRepo, "refs/heads/orphaned")).toBe(await git(h.clone, "rev-parse", "orphaned"));
      } finally {
        await next.close();
      }
    } finally {
      child.kill("SIGKILL");
      await child.exited;
      // Should the test fail, end the orphaned push it caused (ours, by pid) rather than leave it.
      for (const [pid] of processesWith(gateDir)) {
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {}
      }
    }
  }, 30_000);
});
