// least-privilege (CI files): a commit that changes what any forge or CI service runs with the repository's own
// credentials is refused without `--allow ci-files`, under every name those services read and however git would quote
// the path (a quote, a tab, a non-ASCII letter) or a case-folding filesystem would fold it. Real bridge, real shim, a
// token-demanding git server on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { git, makeHarness, refIn, type Harness } from "./harness";

let h: Harness;
beforeAll(async () => {
  h = await makeHarness();
});
afterAll(async () => {
  await h.stop();
});

const CASES: [what: string, path: string][] = [
  ["a workflow whose name git quotes (a double quote)", '.github/workflows/a"b.yml'],
  ["a workflow whose name git quotes (a tab)", ".github/workflows/t\tb.yml"],
  ["a workflow whose name git quotes (non-ASCII)", ".github/workflows/\u00fc.yml"],
  ["a workflow in another case (a case-folding checkout)", ".GitHub/Workflows/ci.yml"],
  ["a workflow behind an HFS+-ignored code point", ".git\u200chub/workflows/ci.yml"],
  ["Gitea Actions", ".gitea/workflows/ci.yaml"],
  ["Forgejo Actions", ".forgejo/workflows/ci.yml"],
  ["Bitbucket Pipelines", "bitbucket-pipelines.yml"],
  ["Woodpecker (a dir)", ".woodpecker/build.yml"],
  ["Drone", ".drone.yml"],
  ["Travis", ".travis.yml"],
  ["a Jenkinsfile in a subdir", "services/api/Jenkinsfile"],
  ["a composite action outside .github", "tools/setup/action.yml"],
];

async function pushWith(branch: string, path: string) {
  await git(h.clone, "checkout", "-q", "-B", branch, await refIn(h.upstreamRepo, "refs/heads/main"));
  mkdirSync(join(h.clone, dirname(path)), { recursive: true });
  writeFileSync(join(h.clone, path), "on: push\njobs: {}\n");
  await git(h.clone, "add", "-A");
  await git(h.clone, "commit", "-q", "-m", "ci");
  return h.shim(["push", "origin", `${branch}:sbx/demo/${branch}`]);
}

describe("least-privilege: CI files under any forge's name and any spelling", () => {
  for (const [i, [what, path]] of CASES.entries()) {
    test(what, async () => {
      const branch = `ci-any-${i}`;
      const r = await pushWith(branch, path);
      expect(r.stderr).toContain("CI or automation files");
      expect(r.stderr).toContain("--allow ci-files");
      expect(r.code).toBe(77);
      expect(await refIn(h.upstreamRepo, `refs/heads/sbx/demo/${branch}`)).toBe("");
    });
  }

  test("a symlink where a CI dir would be (.github -> ci) is one: the forge may read through it", async () => {
    await git(h.clone, "checkout", "-q", "-B", "ci-link", await refIn(h.upstreamRepo, "refs/heads/main"));
    mkdirSync(join(h.clone, "ci", "workflows"), { recursive: true });
    writeFileSync(join(h.clone, "ci", "workflows", "x.yml"), "on: push\njobs: {}\n");
    symlinkSync("ci", join(h.clone, ".github"));
    await git(h.clone, "add", "-A");
    await git(h.clone, "commit", "-q", "-m", "ci by a link");
    const r = await h.shim(["push", "origin", "ci-link:sbx/demo/ci-link"]);
    expect(r.stderr).toContain(".github");
    expect(r.code).toBe(77);
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/demo/ci-link")).toBe("");
  });

  test("a file that only looks like one (docs about CI, a workflow dir below the root) goes out", async () => {
    const r = await pushWith("not-ci", "docs/travis.md");
    expect(r.code).toBe(0);
    const nested = await pushWith("not-ci-2", "vendor/lib/.github/workflows-notes.txt");
    expect(nested.code).toBe(0);
  });
});

describe("least-privilege: a CI file changed in a way whose diff has no lines, or under an odd dir name, is still one", () => {
  let base = "";
  beforeAll(async () => {
    // The upstream and the person's repo already hold a workflow, and a Travis file under a dir whose name holds " b/"
    // (a `diff --git a/… b/…` header that splits wrongly at its first " b/").
    mkdirSync(join(h.host, ".github", "workflows"), { recursive: true });
    writeFileSync(join(h.host, ".github/workflows/ci.yml"), "on: push\njobs: {}\n");
    mkdirSync(join(h.host, "docs b"), { recursive: true });
    writeFileSync(join(h.host, "docs b/.travis.yml"), "language: c\n");
    await git(h.host, "add", "-A");
    await git(h.host, "commit", "-q", "-m", "ci files the person has");
    const url = h.upstream.repoUrl("proj").replace("http://", `http://x:${h.token}@`);
    await git(h.host, "push", "-q", url, "main");
    await git(h.host, "fetch", "-q", url, "+refs/heads/*:refs/remotes/origin/*");
    base = await git(h.host, "rev-parse", "HEAD");
  });

  const CHANGES: [what: string, change: () => void, named: string][] = [
    ["its mode alone (chmod +x)", () => chmodSync(join(h.clone, ".github/workflows/ci.yml"), 0o755), ".github/workflows/ci.yml"],
    ["a new empty workflow", () => writeFileSync(join(h.clone, ".github/workflows/empty.yml"), ""), ".github/workflows/empty.yml"],
    ["a workflow deleted", () => rmSync(join(h.clone, ".github/workflows/ci.yml")), ".github/workflows/ci.yml"],
    ["a Travis file under a dir named 'docs b'", () => writeFileSync(join(h.clone, "docs b/.travis.yml"), "language: go\n"), "docs b/.travis.yml"],
  ];
  for (const [i, [what, change, named]] of CHANGES.entries()) {
    test(what, async () => {
      const branch = `ci-quiet-${i}`;
      await git(h.clone, "checkout", "-q", "-B", branch, base);
      change();
      await git(h.clone, "add", "-A");
      await git(h.clone, "commit", "-q", "-m", "quiet ci change");
      const r = await h.shim(["push", "origin", `${branch}:sbx/demo/${branch}`]);
      expect(r.stderr).toContain("CI or automation files");
      expect(r.stderr).toContain(named);
      expect(r.code).toBe(77);
      expect(await refIn(h.upstreamRepo, `refs/heads/sbx/demo/${branch}`)).toBe("");
    });
  }
});
