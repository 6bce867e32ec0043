// The bridge's early push (started forced, before the pack is indexed) keeps git's push rules: fast-forwards go, anything else needs the sandbox's own --force.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { commitOn, git, makeHarness, refIn, sh, type Harness } from "./harness";

let h: Harness;
beforeAll(async () => {
  h = await makeHarness();
});
afterAll(async () => {
  await h.stop();
});

/** Pushes a commit to the upstream from elsewhere (not through the sandbox), as a colleague would. */
async function pushFromElsewhere(branch: string, file: string): Promise<string> {
  const other = join(h.root, `other-${branch}-${file}`);
  const url = h.upstream.repoUrl("proj").replace("http://", `http://x:${h.token}@`);
  await git(h.root, "clone", "-q", "-b", branch, url, other);
  await Bun.write(join(other, file), `${file}\n`);
  await git(other, "add", file);
  await git(other, "commit", "-q", "-m", `elsewhere ${file}`);
  await git(other, "push", "-q", "origin", branch);
  return git(other, "rev-parse", "HEAD");
}

describe("push rules under the early push", () => {
  test("a fast-forward update goes out and is reported as one (a..b, not a forced update)", async () => {
    const first = await commitOn(h.clone, "ff", { "one.txt": "1\n" });
    expect((await h.shim(["push", "origin", "ff"])).code).toBe(0);
    const second = await commitOn(h.clone, "ff", { "two.txt": "2\n" });
    const r = await h.shim(["push", "origin", "ff"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`${first.slice(0, 7)}..${second.slice(0, 7)}`);
    expect(r.stderr).toContain("ff -> ff");
    expect(r.stderr).not.toContain("forced update");
    expect(r.stderr).not.toContain("sbx-gate");
    expect(await refIn(h.upstreamRepo, "refs/heads/ff")).toBe(second);
  });

  test("a push that is not a fast-forward is rejected as git would, and the upstream keeps its commit", async () => {
    await git(h.clone, "checkout", "-q", "main");
    await commitOn(h.clone, "div", { "d.txt": "mine\n" });
    expect((await h.shim(["push", "origin", "div"])).code).toBe(0);
    const theirs = await pushFromElsewhere("div", "theirs.txt");
    const mine = await commitOn(h.clone, "div", { "d2.txt": "mine again\n" });
    const r = await h.shim(["push", "origin", "div"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("[rejected]");
    expect(r.stderr).toMatch(/fetch first|non-fast-forward/);
    expect(r.stderr).not.toContain("sbx-gate");
    expect(await refIn(h.upstreamRepo, "refs/heads/div")).toBe(theirs);
    // With the sandbox's own --force it goes.
    const f = await h.shim(["push", "--force", "origin", "div"]);
    expect(f.code).toBe(0);
    expect(await refIn(h.upstreamRepo, "refs/heads/div")).toBe(mine);
  });

  test("a rewritten branch (the remote tip is in the gate, not an ancestor) is rejected without --force", async () => {
    await git(h.clone, "checkout", "-q", "main");
    const a = await commitOn(h.clone, "rw", { "r.txt": "1\n" });
    expect((await h.shim(["push", "origin", "rw"])).code).toBe(0);
    await git(h.clone, "reset", "-q", "--hard", "main");
    const b = await commitOn(h.clone, "rw", { "r.txt": "rewritten\n" });
    const r = await h.shim(["push", "origin", "rw"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("[rejected]");
    expect(await refIn(h.upstreamRepo, "refs/heads/rw")).toBe(a);
    const f = await h.shim(["push", "origin", "+rw"]);
    expect(f.code).toBe(0);
    expect(f.stderr).toContain("forced update");
    expect(await refIn(h.upstreamRepo, "refs/heads/rw")).toBe(b);
  });

  // The gate tells a fast-forward from the scan's walk where it can (the remote's tip is a parent of a pushed commit).
  // git's parents are the `parent` headers right after `tree`; one anywhere else is text git prints (log --pretty=raw)
  // but never follows, and must not make a rewrite pass as a fast-forward.
  for (const [name, where] of [
    ["after the committer", (tree: string, base: string, tip: string) => `tree ${tree}\nparent ${base}\nauthor t <t@example.invalid> 1700000000 +0000\ncommitter t <t@example.invalid> 1700000000 +0000\nparent ${tip}\n\nrewritten\n`],
    ["in a header's continuation line", (tree: string, base: string, tip: string) => `tree ${tree}\nparent ${base}\nauthor t <t@example.invalid> 1700000000 +0000\ncommitter t <t@example.invalid> 1700000000 +0000\nx-note first\n parent ${tip}\n\nrewritten\n`],
  ] as const) {
    test(`a rewrite whose commit names the remote's tip in a parent header git does not follow (${name}) is not a fast-forward`, async () => {
      const branch = `fake-parent-${name.split(" ")[0]}-${name.length}`;
      await git(h.clone, "checkout", "-q", "main");
      const base = await git(h.clone, "rev-parse", "main");
      const tip = await commitOn(h.clone, branch, { "p.txt": "1\n" });
      expect((await h.shim(["push", "origin", branch])).code).toBe(0);
      const tree = await git(h.clone, "rev-parse", `${tip}^{tree}`);
      const fake = (await sh(["git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin"], { cwd: h.clone, stdin: where(tree, base, tip) })).stdout.trim();
      expect(fake).toMatch(/^[0-9a-f]{40}$/);
      await git(h.clone, "update-ref", `refs/heads/${branch}`, fake);
      const r = await h.shim(["push", "origin", branch]);
      expect(r.code).not.toBe(0);
      expect(await refIn(h.upstreamRepo, `refs/heads/${branch}`)).toBe(tip);
    });
  }

  test("a tag the remote already has is not moved", async () => {
    await git(h.clone, "checkout", "-q", "main");
    const t1 = await commitOn(h.clone, "tg", { "t.txt": "1\n" });
    await git(h.clone, "tag", "rel", t1);
    expect((await h.shim(["push", "origin", "rel"])).code).toBe(0);
    const t2 = await commitOn(h.clone, "tg", { "t.txt": "2\n" });
    await git(h.clone, "tag", "-f", "rel", t2);
    const r = await h.shim(["push", "origin", "rel"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("already exists");
    expect(await refIn(h.upstreamRepo, "refs/tags/rel")).toBe(t1);
  });

  test("no verdict FIFO is left behind in the gate: only the one made ahead for the next push", async () => {
    await Bun.sleep(50);
    expect(readdirSync(join(h.root, "gate", "tmp")).length).toBeLessThanOrEqual(1);
  });
});
