// Invariant 4, host-runs-no-guest-config, for ref sync: nothing the sandbox plants in its clone runs on the host while syncing.
//
// Every planted command appends `${SBX_SIDE:-host} <setting>` to a marker file. Processes standing in for the inside
// of the sandbox (the fixture's sandboxGit, commits made "inside") set SBX_SIDE=inside; the sync's own host git runs
// with a replaced environment that has no SBX_SIDE, so any line starting with `host` is a planted command the HOST ran.
// Each test first runs a CONTROL: the naive host-side command a careless sync would use, and shows it does write a
// `host` line, so the assertion after the real sync is one that can fail.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createExec } from "../../../src/sys/exec";
import { startRefSync, type RefSync } from "../../../src/sync/refsync";
import { git, makeFixture, plantScript, REMOTE, waitFor, type SyncFixture } from "./fixture";

let f: SyncFixture | null = null;
let sync: RefSync | null = null;
afterEach(async () => {
  await sync?.stop();
  sync = null;
  f?.cleanup();
  f = null;
});

function hostLines(fx: SyncFixture): string[] {
  return fx.markerLines().filter((l) => l.startsWith("host "));
}

/** Runs a control command the naive way (on the host, in the clone) and returns the host lines it produced. */
function control(fx: SyncFixture, args: string[], cwd = fx.clone): string[] {
  git(cwd, args, "host");
  // Some hooks run more than once per command (reference-transaction: prepared, committed).
  const lines = [...new Set(hostLines(fx))];
  // Start the real check from an empty marker.
  writeFileSync(fx.marker, "");
  return lines;
}

/** Starts the sync and drives both directions through real changes, so the absence of a marker means something. */
async function syncBothWays(fx: SyncFixture, opts: Parameters<SyncFixture["options"]>[0] = {}): Promise<void> {
  sync = await startRefSync(fx.options(opts));
  const inside = fx.commitInside("inside work", "feature");
  await waitFor("clone->host", () => fx.hostRef(`${REMOTE}/feature`) === inside, 5000);
  const hostSha = fx.commitHost("host work");
  await waitFor("host->clone", () => fx.cloneRef("refs/remotes/host/main") === hostSha, 5000);
  const forced = await sync.syncNow();
  expect(forced.every((r) => r.fetched)).toBe(true);
  await sync.stop();
  sync = null;
  expect(fx.events.filter((e) => e.action === "ref-sync.error")).toEqual([]);
}

function plantHook(fx: SyncFixture, dir: string, hook: string, tail = ""): void {
  mkdirSync(dir, { recursive: true });
  const script = plantScript(fx, hook, tail);
  writeFileSync(join(dir, hook), `#!/bin/sh\nexec '${script}' "$@"\n`, { mode: 0o755 });
}

function setCloneConfig(fx: SyncFixture, key: string, value: string): void {
  // `git config -f <file>` only edits a file; it runs nothing from it.
  const r = git(fx.root, ["config", "-f", join(fx.clone, ".git", "config"), key, value], "test");
  expect(r.exitCode).toBe(0);
}

describe("host-runs-no-guest-config: ref sync never runs the clone's hooks or config on the host", () => {
  test("a reference-transaction hook in the clone's .git/hooks", async () => {
    f = makeFixture();
    plantHook(f, join(f.clone, ".git", "hooks"), "reference-transaction");
    expect(control(f, ["update-ref", "refs/heads/control", "HEAD"])).toEqual(["host reference-transaction"]);
    await syncBothWays(f);
    expect(hostLines(f)).toEqual([]);
    // The hook is live: the inside's own commits and fetches ran it.
    expect(f.markerLines().some((l) => l === "inside reference-transaction")).toBe(true);
  });

  test("a post-checkout hook in the clone", async () => {
    f = makeFixture();
    plantHook(f, join(f.clone, ".git", "hooks"), "post-checkout");
    expect(control(f, ["checkout", "-q", "-b", "control"])).toEqual(["host post-checkout"]);
    git(f.clone, ["checkout", "-q", "main"], "inside");
    await syncBothWays(f);
    expect(hostLines(f)).toEqual([]);
  });

  test("a pre-push hook in the clone", async () => {
    f = makeFixture();
    plantHook(f, join(f.clone, ".git", "hooks"), "pre-push", "exit 1");
    expect(control(f, ["push", "-q", "host", "HEAD:refs/heads/control-push"])).toEqual(["host pre-push"]);
    await syncBothWays(f);
    expect(hostLines(f)).toEqual([]);
  });

  test("core.hooksPath in the clone's config pointing at planted hooks", async () => {
    f = makeFixture();
    const dir = join(f.root, "planted-hooks");
    for (const h of ["reference-transaction", "post-checkout", "pre-push", "post-merge", "pre-auto-gc"]) plantHook(f, dir, h);
    setCloneConfig(f, "core.hooksPath", dir);
    expect(control(f, ["update-ref", "refs/heads/control", "HEAD"])).toEqual(["host reference-transaction"]);
    await syncBothWays(f);
    expect(hostLines(f)).toEqual([]);
  });

  test("core.fsmonitor in the clone's config", async () => {
    f = makeFixture();
    setCloneConfig(f, "core.fsmonitor", plantScript(f, "core.fsmonitor", "exit 1"));
    expect(control(f, ["status", "--porcelain"])).toContain("host core.fsmonitor");
    await syncBothWays(f);
    expect(hostLines(f)).toEqual([]);
  });

  test("remote.*.uploadpack in the clone's config", async () => {
    f = makeFixture();
    // Pass-through, so the fetch inside still works and shows the setting is live.
    setCloneConfig(f, "remote.host.uploadpack", plantScript(f, "remote.host.uploadpack", 'exec git-upload-pack "$@"'));
    expect(control(f, ["fetch", "-q", "host"])).toEqual(["host remote.host.uploadpack"]);
    await syncBothWays(f);
    expect(hostLines(f)).toEqual([]);
  });

  test("uploadpack.packObjectsHook in the clone's config, and in a global config the daemon's HOME could point at", async () => {
    f = makeFixture();
    const hook = plantScript(f, "uploadpack.packObjectsHook", 'exec "$@"');
    setCloneConfig(f, "uploadpack.packObjectsHook", hook);
    // git honours this hook only from protected config (system, global, command line); a repo config copy is
    // ignored by git itself. What sbx must add is an environment with no global or system config: plant the hook
    // in a $HOME/.gitconfig and give the sync's executor that HOME, as a daemon started from a bad env would.
    const home = join(f.root, "planted-home");
    mkdirSync(home);
    writeFileSync(join(home, ".gitconfig"), `[uploadpack]\n\tpackObjectsHook = ${hook}\n`);
    // Something to pack: upload-pack starts pack-objects (and so the hook) only when objects must be sent.
    f.commitInside("to pack", "control");
    writeFileSync(f.marker, "");
    // Control: a host fetch from the clone that inherits that HOME runs the hook on the host.
    const ctl = Bun.spawnSync(["git", "-C", f.host, "fetch", "-q", "--no-tags", f.clone, `+refs/heads/*:refs/remotes/control/*`], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home },
    });
    expect(ctl.exitCode).toBe(0);
    expect(hostLines(f)).toEqual(["host uploadpack.packObjectsHook"]);
    writeFileSync(f.marker, "");
    const exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, GIT_CONFIG_GLOBAL: join(home, ".gitconfig") });
    await syncBothWays(f, { exec });
    expect(hostLines(f)).toEqual([]);
  });

  test("core.alternateRefsCommand in the clone's config", async () => {
    f = makeFixture();
    setCloneConfig(f, "core.alternateRefsCommand", plantScript(f, "core.alternateRefsCommand", "exit 0"));
    // A fetch run in the clone asks its alternate (the host repo) for refs through this command.
    f.commitHost("something to fetch");
    expect(control(f, ["fetch", "-q", "host"])).toEqual(["host core.alternateRefsCommand"]);
    await syncBothWays(f);
    expect(hostLines(f)).toEqual([]);
  });

  test("the daemon's own GIT_DIR and GIT_* variables do not leak into the sync's git", async () => {
    f = makeFixture();
    // If the environment were inherited, GIT_DIR would make the 'host' fetch run against the clone itself.
    const exec = createExec({
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      GIT_DIR: join(f.clone, ".git"),
      GIT_ALTERNATE_OBJECT_DIRECTORIES: join(f.root, "nowhere"),
    });
    await syncBothWays(f, { exec });
    expect(f.hostRef(`${REMOTE}/feature`)).not.toBeNull();
  });
});
