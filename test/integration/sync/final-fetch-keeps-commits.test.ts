// Before stop/rm: the last clone → host fetch keeps every commit made inside under sandbox-<name>/*, even after the clone is gone.
import { afterEach, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SbxError } from "../../../src/core/errors";
import { createExec } from "../../../src/sys/exec";
import { finalFetch, retireSandboxRemote } from "../../../src/sync/final-fetch";
import { git, makeFixture, REMOTE, type SyncFixture } from "./fixture";

let f: SyncFixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});
const exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });

describe("final fetch before stop / rm (nothing-lost)", () => {
  test("commits made inside stay reachable on the host after the clone and the remote are gone, and survive gc --prune=now", async () => {
    f = makeFixture();
    const a = f.commitInside("inside 1", "feature");
    writeFileSync(join(f.clone, "new-file"), "made inside\n");
    git(f.clone, ["add", "new-file"], "inside");
    git(f.clone, ["commit", "-q", "-m", "inside 2"], "inside");
    const b = f.cloneRef("refs/heads/feature")!;
    expect(b).not.toBe(a);
    const r = await finalFetch({ hostRepo: f.host, clonePath: f.clone, remoteName: REMOTE, expectedAlternates: f.alternates, exec });
    expect(r.fetched).toBe(true);
    expect(r.refs.feature).toBe(b);
    expect(r.refs.main).toBe(f.hostRef("refs/heads/main")!);

    expect(await retireSandboxRemote(exec, f.host, REMOTE)).toBe(true);
    expect(await retireSandboxRemote(exec, f.host, REMOTE)).toBe(false); // already gone: fine
    rmSync(f.sandboxDir, { recursive: true, force: true });
    expect(git(f.host, ["config", "--get", `remote.${REMOTE}.url`], "test").exitCode).toBe(1);
    git(f.host, ["gc", "-q", "--prune=now"], "test");
    expect(git(f.host, ["log", "--format=%s", `${REMOTE}/feature`], "test").stdout).toBe("inside 2\ninside 1\ninit\n");
    expect(git(f.host, ["show", `${REMOTE}/feature:new-file`], "test").stdout).toBe("made inside\n");

    // A second rm after a crash: no clone left, nothing to fetch, the kept refs are still listed.
    const again = await finalFetch({ hostRepo: f.host, clonePath: f.clone, remoteName: REMOTE, expectedAlternates: f.alternates, exec });
    expect(again).toEqual({ fetched: false, refs: r.refs });
  });

  test("refuses, with a hint, when the clone's alternates were rewritten", async () => {
    f = makeFixture();
    f.commitInside("x", "feature");
    writeFileSync(join(f.clone, ".git", "objects", "info", "alternates"), "/somewhere/else/objects\n");
    const events: unknown[] = [];
    const err = await finalFetch({
      hostRepo: f.host,
      clonePath: f.clone,
      remoteName: REMOTE,
      expectedAlternates: f.alternates,
      exec,
      audit: (e) => void events.push(e),
    }).catch((e) => e);
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).message).toContain("was rewritten");
    expect((err as SbxError).hint).toContain("--force");
    expect(events).toHaveLength(1);
    expect(f.hostRef(`${REMOTE}/feature`)).toBeNull();
  });

  test("rejects a remote name that is not sandbox-<name>", async () => {
    f = makeFixture();
    const opts = { hostRepo: f.host, clonePath: f.clone, expectedAlternates: f.alternates, exec };
    for (const bad of ["origin", "sandbox-", "sandbox-A", "sandbox-a/../b", "sandbox-x y"]) {
      await expect(finalFetch({ ...opts, remoteName: bad })).rejects.toThrow(/not a sandbox remote name/);
    }
  });
});
