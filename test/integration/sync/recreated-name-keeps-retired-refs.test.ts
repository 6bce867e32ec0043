// nothing-lost across names: a new sandbox with a retired sandbox's name moves the kept sandbox-<name>/* refs aside before its first sync could delete them.
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { realpathSync, rmSync } from "node:fs";
import { createExec } from "../../../src/sys/exec";
import { importSandbox } from "../../../src/sync/import";
import { retiredPrefix, retiredStamp, setAsideRetiredRefs } from "../../../src/sync/retired-refs";
import { retireStore } from "../../../src/sync/store";
import { createClone } from "../../../src/workspace/clone";
import { sandboxLayout } from "../../../src/workspace/layout";
import { SANDBOX_GIT_SAFE, type SandboxGit } from "../../../src/sync/sandbox-git";
import { streamRun } from "../../../src/sys/exec";
import { git, makeFixture, NAME, REMOTE, type SyncFixture } from "./fixture";

let f: SyncFixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});
const exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });

/** The sandbox's own git in a clone (a stand-in for a driver's sandboxGit). */
const gitIn = (clone: string): SandboxGit => (args, stdin) => streamRun(exec, ["git", ...SANDBOX_GIT_SAFE, "-C", clone, ...args], stdin === undefined ? {} : { stdin });

/** The new sandbox's first sync: its clone's branches become sandbox-<name>/*, and only those. */
async function firstSync(host: string, dir: string): Promise<void> {
  await importSandbox({ repo: host, name: NAME, sandboxGit: gitIn(sandboxLayout(dir).clone), exec });
}

/** The old sandbox: a commit on `feature`, the last sync, then `rm` (its store retired, clone gone). Returns the commit. */
async function retiredSandbox(fx: SyncFixture): Promise<string> {
  const old = fx.commitInside("made in the old sandbox", "feature");
  await importSandbox({ repo: fx.host, name: NAME, sandboxGit: fx.sandboxGit, exec });
  await retireStore({ exec, repo: fx.host }, NAME);
  rmSync(fx.sandboxDir, { recursive: true, force: true });
  expect(fx.hostRef(`refs/remotes/${REMOTE}/feature`)).toBe(old);
  return old;
}

describe("re-creating a sandbox with a retired name (nothing-lost)", () => {
  test("control: without setting them aside, the new sandbox's first sync deletes the old sandbox's refs", async () => {
    f = makeFixture();
    await retiredSandbox(f);
    const host = realpathSync(f.host);
    await createClone(exec, { repo: host, dir: join(f.root, "new"), name: NAME });
    await firstSync(host, join(f.root, "new"));
    expect(f.hostRef(`refs/remotes/${REMOTE}/feature`)).toBeNull();
  });

  test("set aside first: the old refs move to refs/sbx-retired/<name>/<stamp>/*, survive the first sync and gc", async () => {
    f = makeFixture();
    const old = await retiredSandbox(f);
    const host = realpathSync(f.host);
    const stamp = retiredStamp(new Date(Date.UTC(2026, 10, 22, 1, 2, 3, 456)));
    expect(stamp).toBe("20261122T010203Z");
    const aside = await setAsideRetiredRefs(exec, host, NAME, stamp);
    expect(aside?.prefix).toBe(retiredPrefix(NAME, stamp));
    expect(aside?.branches.sort()).toEqual(["HEAD", "feature", "main"]);
    expect(f.hostRef(`refs/remotes/${REMOTE}/feature`)).toBeNull();

    await createClone(exec, { repo: host, dir: join(f.root, "new"), name: NAME });
    await firstSync(host, join(f.root, "new"));
    git(f.host, ["gc", "-q", "--prune=now"], "test");
    expect(f.hostRef(`refs/sbx-retired/${NAME}/${stamp}/feature`)).toBe(old);
    expect(git(f.host, ["log", "--format=%s", "-1", `refs/sbx-retired/${NAME}/${stamp}/feature`], "test").stdout.trim()).toBe("made in the old sandbox");
    // The new sandbox's own refs are its own.
    expect(f.hostRef(`refs/remotes/${REMOTE}/main`)).toBe(f.hostRef("refs/heads/main"));
    // Nothing left to set aside a second time.
    expect(await setAsideRetiredRefs(exec, host, "other", stamp)).toBeNull();
  });
});
