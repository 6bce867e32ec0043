// The push scan looks for the host's own secret values in every form a sandbox could hide one in, in every field it
// chose: file contents (encoded), file names, commit messages, author and committer. Real bridge, real shim.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { git, makeHarness, refIn, sh, type Harness } from "./harness";

let h: Harness;
beforeAll(async () => {
  h = await makeHarness();
});
afterAll(async () => {
  await h.stop();
});

/** A commit on a fresh branch from the upstream's main, made as `make` says; then a push of it through the bridge. */
async function pushed(branch: string, make: () => Promise<void>) {
  await git(h.clone, "checkout", "-q", "-B", branch, await refIn(h.upstreamRepo, "refs/heads/main"));
  await make();
  return h.shim(["push", "origin", branch]);
}

describe("the push scan finds the host's own secret values", () => {
  const forms: [string, (t: string) => string][] = [
    ["base64", (t) => Buffer.from(t).toString("base64")],
    ["hex", (t) => Buffer.from(t).toString("hex")],
    ["reversed", (t) => [...t].reverse().join("")],
    ["URL-encoded inside a URL", (t) => `https://x.example/?k=${encodeURIComponent(t)}`],
    ["a slice", (t) => t.slice(3, 20)],
  ];
  for (const [name, enc] of forms) {
    test(`in a file's content, ${name}`, async () => {
      const r = await pushed(`v-${name.replace(/\W+/g, "-")}`, async () => {
        await Bun.write(join(h.clone, "notes.txt"), `nothing to see ${enc(h.token)} here\n`);
        await git(h.clone, "add", "notes.txt");
        await git(h.clone, "commit", "-q", "-m", "notes");
      });
      expect(r.code).toBe(77);
      expect(r.stderr).toContain("the value of the host secret GIT_TOKEN");
      expect(r.stderr).not.toContain(h.token);
    });
  }

  test("in a file name, a commit message, the author: each refused, the upstream untouched", async () => {
    const fileName = await pushed("v-name", async () => {
      await Bun.write(join(h.clone, `${h.token}.txt`), "x\n");
      await git(h.clone, "add", "-A");
      await git(h.clone, "commit", "-q", "-m", "a file");
    });
    expect(fileName.code).toBe(77);
    const message = await pushed("v-msg", async () => {
      await git(h.clone, "commit", "-q", "--allow-empty", "-m", `fix: see ${Buffer.from(h.token).toString("base64")}`);
    });
    expect(message.code).toBe(77);
    const author = await pushed("v-author", async () => {
      const r = await sh(["git", "commit", "-q", "--allow-empty", "-m", "innocent"], { cwd: h.clone, env: { GIT_AUTHOR_NAME: h.token, SBX_IN_SANDBOX: "1" } });
      expect(r.code).toBe(0);
    });
    expect(author.code).toBe(77);
    expect(author.stderr).toContain("commit header");
    for (const b of ["v-name", "v-msg", "v-author"]) expect(await refIn(h.upstreamRepo, `refs/heads/${b}`)).toBe("");
  });

  test("control: the same push without the value goes out", async () => {
    const r = await pushed("v-clean", async () => {
      await Bun.write(join(h.clone, "notes.txt"), "nothing to see here\n");
      await git(h.clone, "add", "notes.txt");
      await git(h.clone, "commit", "-q", "-m", "notes");
    });
    expect(r.code).toBe(0);
  });
});
