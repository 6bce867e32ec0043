// Live ref sync between a real host repo and its shared clone: both directions, bursts, no command typed, clean stop.
import { afterEach, describe, expect, test } from "bun:test";
import { startRefSync, type RefSync } from "../../../src/sync/refsync";
import type { SandboxGit } from "../../../src/sync/sandbox-git";
import { makeFixture, REMOTE, waitFor, type SyncFixture } from "./fixture";

let f: SyncFixture | null = null;
let sync: RefSync | null = null;
afterEach(async () => {
  await sync?.stop();
  sync = null;
  f?.cleanup();
  f = null;
});

describe("live ref sync (watchers, backstop poll off unless a test says so)", () => {
  test("a commit made in the clone is on the host as sandbox-<name>/<branch>, with no command typed (how fast: bench/refsync.bench.ts)", async () => {
    f = makeFixture();
    sync = await startRefSync(f.options());
    expect(sync.health().state).toBe("ok");
    expect(sync.health().watchers).toBe(4);
    const fx = f;
    const sha = fx.commitInside("work inside", "feature");
    await waitFor("host ref", () => fx.hostRef(`${REMOTE}/feature`) === sha, 5000);
    // Tags the sandbox makes never become host tags.
    expect(fx.hostRef("refs/tags/x")).toBeNull();
    expect(f.events.some((e) => e.action === "ref-sync.synced" && e.detail.direction === "clone-to-host")).toBe(true);
  });

  test("a commit on a host branch shows up in the clone as a remote-tracking ref", async () => {
    f = makeFixture();
    sync = await startRefSync(f.options());
    const fx = f;
    const sha = fx.commitHost("host work", "main");
    await waitFor("clone remote-tracking ref", () => fx.cloneRef("refs/remotes/host/main") === sha, 5000);
    const branch = fx.commitHost("a new host branch", "topic");
    await waitFor("new branch inside", () => fx.cloneRef("refs/remotes/host/topic") === branch, 5000);
  });

  test("30 rapid commits in the clone: the host ends at the last one, and no sync is lost", async () => {
    f = makeFixture();
    sync = await startRefSync(f.options());
    const fx = f;
    let last = "";
    for (let i = 0; i < 30; i++) last = fx.commitInside(`rapid ${i}`, i === 0 ? "burst" : undefined);
    await waitFor("last of 30", () => fx.hostRef(`${REMOTE}/burst`) === last, 3000);
    // Every commit is in the host's object store and reachable from the sandbox ref.
    const count = Number(Bun.spawnSync(["git", "-C", fx.host, "rev-list", "--count", `main..${REMOTE}/burst`]).stdout.toString());
    expect(count).toBe(30);
    // And it settles: nothing keeps fetching once the refs agree. (Let the fetch that wrote the ref return first:
    // git updates the ref before its process exits.)
    await Bun.sleep(200);
    const n = sync.health().syncs["clone-to-host"];
    await Bun.sleep(400);
    expect(sync.health().syncs["clone-to-host"]).toBe(n);
  });

  test("a branch deleted in the clone is pruned from sandbox-<name>/* on the host", async () => {
    f = makeFixture();
    sync = await startRefSync(f.options());
    const fx = f;
    const sha = fx.commitInside("doomed", "gone-soon");
    await waitFor("branch on host", () => fx.hostRef(`${REMOTE}/gone-soon`) === sha, 5000);
    fx.commitInside("back", "main");
    Bun.spawnSync(["git", "-C", fx.clone, "branch", "-q", "-D", "gone-soon"]);
    await waitFor("pruned", () => fx.hostRef(`${REMOTE}/gone-soon`) === null, 5000);
  });

  test("refs packed by `git pack-refs` in the clone are seen (the sandbox's own git lists them)", async () => {
    f = makeFixture();
    sync = await startRefSync(f.options());
    const fx = f;
    const sha = fx.commitInside("to be packed", "packed");
    await waitFor("first sync", () => fx.hostRef(`${REMOTE}/packed`) === sha, 5000);
    Bun.spawnSync(["git", "-C", fx.clone, "pack-refs", "--all"]);
    // A packed-only update: rewrite packed-refs so that `packed` moves to a new commit with no loose file.
    const next = fx.commitInside("after pack", "other");
    Bun.spawnSync(["git", "-C", fx.clone, "pack-refs", "--all"]);
    Bun.spawnSync(["git", "-C", fx.clone, "update-ref", "refs/heads/packed", next]);
    Bun.spawnSync(["git", "-C", fx.clone, "pack-refs", "--all"]);
    await waitFor("packed ref moved", () => fx.hostRef(`${REMOTE}/packed`) === next, 5000);
  });

  test("the backstop poll alone syncs both ways when no watcher runs", async () => {
    f = makeFixture();
    sync = await startRefSync(f.options({ watch: false, pollMs: 150 }));
    expect(sync.health().watchers).toBe(0);
    const fx = f;
    const hostSha = fx.commitHost("poll me too");
    await waitFor("polled host->clone", () => fx.cloneRef("refs/remotes/host/main") === hostSha, 1500);
    const sha = fx.commitInside("poll me", "polled");
    await waitFor("polled sync", () => fx.hostRef(`${REMOTE}/polled`) === sha, 1500);
  });

  test("syncNow fetches both ways; stop() closes watchers, audits, and later changes are no longer synced", async () => {
    f = makeFixture();
    sync = await startRefSync(f.options());
    const fx = f;
    const results = await sync.syncNow();
    expect(results.map((r) => [r.direction, r.fetched])).toEqual([
      ["clone-to-host", true],
      ["host-to-clone", true],
    ]);
    await sync.stop();
    expect(sync.health()).toMatchObject({ state: "stopped", ok: false, watchers: 0 });
    expect(fx.events.at(-1)?.action).toBe("ref-sync.stop");
    const sha = fx.commitInside("after stop", "late");
    await Bun.sleep(300);
    expect(fx.hostRef(`${REMOTE}/late`)).toBeNull();
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    await expect(sync.syncNow()).rejects.toThrow(/stopped/);
  });

  test("git inside that fails is audited and shown in health, then recovers on the next change", async () => {
    f = makeFixture();
    const fx = f;
    let broken = true;
    const failing: SandboxGit = () => ({
      stdout: new ReadableStream({ start: (c) => c.close() }),
      done: Promise.resolve({ exitCode: 1, stderr: "Error: No such container: x" }),
    });
    sync = await startRefSync(fx.options({ sandboxGit: async () => (broken ? failing : fx.sandboxGit) }));
    expect(sync.health().state).toBe("degraded");
    expect(sync.health().detail).toContain("No such container");
    expect(fx.events.some((e) => e.action === "ref-sync.error" && String(e.detail.error).includes("No such container"))).toBe(true);
    broken = false;
    const sha = fx.commitHost("after repair");
    await waitFor("recovered", () => fx.cloneRef("refs/remotes/host/main") === sha, 5000);
    // The other way, which failed too, is retried at once (no poll runs here): health comes back whole.
    await waitFor("both ways ok", () => sync!.health().state === "ok", 5000);
  });
});
