// The bridge takes remote URLs from the host repo's config as it is at each request: it keeps what it read only while the
// config files' bytes stay the same, so a remote the person moves (or a file the config includes) counts at once.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { commitOn, git, makeHarness, refIn, type Harness } from "./harness";

let h: Harness;
beforeAll(async () => {
  h = await makeHarness();
});
afterAll(async () => {
  await h.stop();
});

describe("credential-scope: the host repo's remotes as they are at each push", () => {
  test("the person points origin elsewhere between two pushes: the second goes there, the first upstream is left alone", async () => {
    const first = await commitOn(h.clone, "moved", { "m.txt": "1\n" });
    expect((await h.shim(["push", "origin", "moved"])).code).toBe(0);
    expect(await refIn(h.upstreamRepo, "refs/heads/moved")).toBe(first);
    const other = await h.upstream.createRepo("elsewhere");
    await git(h.host, "remote", "set-url", "origin", h.upstream.repoUrl("elsewhere"));
    try {
      const second = await commitOn(h.clone, "moved", { "m.txt": "2\n" });
      const r = await h.shim(["push", "origin", "moved"]);
      expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
      expect(await refIn(other, "refs/heads/moved")).toBe(second);
      expect(await refIn(h.upstreamRepo, "refs/heads/moved")).toBe(first);
    } finally {
      await git(h.host, "remote", "set-url", "origin", h.upstream.repoUrl("proj"));
    }
  });

  test("a remote defined in a file the config includes: a change there (the config's own bytes unchanged) counts too", async () => {
    const inc = join(h.root, "remotes.inc");
    await Bun.write(inc, `[remote "inc"]\n\turl = ${h.upstream.repoUrl("proj")}\n`);
    appendFileSync(join(h.host, ".git", "config"), `[include]\n\tpath = ${inc}\n`);
    // The clone names the remote too (its URL is the sandbox's to say, and the bridge ignores it).
    await git(h.clone, "remote", "add", "inc", h.upstream.repoUrl("proj"));
    const first = await commitOn(h.clone, "inc-branch", { "i.txt": "1\n" });
    expect((await h.shim(["push", "inc", "inc-branch"])).code).toBe(0);
    expect(await refIn(h.upstreamRepo, "refs/heads/inc-branch")).toBe(first);
    const other = await h.upstream.createRepo("included");
    await Bun.write(inc, `[remote "inc"]\n\turl = ${h.upstream.repoUrl("included")}\n`);
    const second = await commitOn(h.clone, "inc-branch", { "i.txt": "2\n" });
    const r = await h.shim(["push", "inc", "inc-branch"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(await refIn(other, "refs/heads/inc-branch")).toBe(second);
    expect(await refIn(h.upstreamRepo, "refs/heads/inc-branch")).toBe(first);
  });

  test("a remote the person removed is no longer pushed to", async () => {
    await git(h.host, "remote", "add", "gone", h.upstream.repoUrl("proj"));
    await git(h.clone, "remote", "add", "gone", h.upstream.repoUrl("proj"));
    await commitOn(h.clone, "gone-branch", { "g.txt": "1\n" });
    expect((await h.shim(["push", "gone", "gone-branch"])).code).toBe(0);
    await git(h.host, "remote", "remove", "gone");
    await commitOn(h.clone, "gone-branch", { "g.txt": "2\n" });
    const r = await h.shim(["push", "gone", "gone-branch"]);
    expect(r.code).not.toBe(0);
  });
});
