// nothing-lost across names: a new sandbox with a retired sandbox's name moves the kept sandbox-<name>/* refs aside before its first --prune fetch could delete them.
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { realpathSync, rmSync } from "node:fs";
import { createExec } from "../../../src/sys/exec";
import { finalFetch, retiredPrefix, retiredStamp, retireSandboxRemote, setAsideRetiredRefs } from "../../../src/sync/final-fetch";
import { createClone, fetchSandboxRefs } from "../../../src/workspace/clone";
import { git, makeFixture, NAME, REMOTE, type SyncFixture } from "./fixture";

let f: SyncFixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});
const exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });

/** The old sandbox: a commit on `feature`, the final fetch, then `rm` (remote config retired, clone gone). Returns the commit. */
async function retiredSandbox(fx: SyncFixture): Promise<string> {
  const old = fx.commitInside("made in the old sandbox", "feature");
  await finalFetch({ hostRepo: fx.host, clonePath: fx.clone, remoteName: REMOTE, expectedAlternates: fx.alternates, exec });
  await retireSandboxRemote(exec, fx.host, REMOTE);
  rmSync(fx.sandboxDir, { recursive: true, force: true });
  expect(fx.hostRef(`refs/remotes/${REMOTE}/feature`)).toBe(old);
  return old;
}

describe("re-creating a sandbox with a retired name (nothing-lost)", () => {
  test("control: without setting them aside, the new clone's first --prune fetch deletes the old sandbox's refs", async () => {
    f = makeFixture();
    await retiredSandbox(f);
    const host = realpathSync(f.host);
    await createClone(exec, { repo: host, dir: join(f.root, "new"), name: NAME });
    await fetchSandboxRefs(exec, host, NAME);
    expect(f.hostRef(`refs/remotes/${REMOTE}/feature`)).toBeNull();
  });

  test("set aside first: the old refs move to refs/sbx-retired/<name>/<stamp>/*, survive the prune fetch and gc", async () => {
    f = makeFixture();
    const old = await retiredSandbox(f);
    const host = realpathSync(f.host);
    const stamp = retiredStamp(new Date(Date.UTC(2026, 10, 22, 1, 2, 3, 456)));
    expect(stamp).toBe("20261122T010203Z");
    const aside = await setAsideRetiredRefs(exec, host, NAME, stamp);
    expect(aside?.prefix).toBe(retiredPrefix(NAME, stamp));
    expect(aside?.branches.sort()).toEqual(["feature", "main"]);
    expect(f.hostRef(`refs/remotes/${REMOTE}/feature`)).toBeNull();

    await createClone(exec, { repo: host, dir: join(f.root, "new"), name: NAME });
    await fetchSandboxRefs(exec, host, NAME);
    git(f.host, ["gc", "-q", "--prune=now"], "test");
    expect(f.hostRef(`refs/sbx-retired/${NAME}/${stamp}/feature`)).toBe(old);
    expect(git(f.host, ["log", "--format=%s", "-1", `refs/sbx-retired/${NAME}/${stamp}/feature`], "test").stdout.trim()).toBe("made in the old sandbox");
    // The new sandbox's own refs are its own.
    expect(f.hostRef(`refs/remotes/${REMOTE}/main`)).toBe(f.hostRef("refs/heads/main"));
    // Nothing left to set aside a second time.
    expect(await setAsideRetiredRefs(exec, host, "other", stamp)).toBeNull();
  });
});
