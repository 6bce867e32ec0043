// sbx doctor per repo: stores listed but gone, remotes an older sbx added into clones, and the token each remote gets.
import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkPushWorkflows, checkSandboxRemotes, checkStores, checkTokens, tokenReport } from "../../../src/doctor/repo-checks";
import { createExec } from "../../../src/sys/exec";

const exec = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });
let roots: string[] = [];
afterEach(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
  roots = [];
});
function repo(): string {
  const root = mkdtempSync(join(tmpdir(), "sbx-doctor-"));
  roots.push(root);
  Bun.spawnSync(["git", "init", "-q", "-b", "main", root]);
  return root;
}

/** Commits files on the repo's main (as the person, test-side). */
function commit(r: string, files: Record<string, string>): void {
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(join(r, p, ".."), { recursive: true });
    writeFileSync(join(r, p), text);
  }
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1", GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@x.invalid", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@x.invalid" };
  Bun.spawnSync(["git", "-C", r, "add", "-A"], { env });
  Bun.spawnSync(["git", "-C", r, "commit", "-q", "-m", "ci"], { env });
}

describe("doctor: the workflows a sandbox's pushed branch starts, with the repository's secrets", () => {
  test("a workflow on every branch push is a warning naming it, branches-ignore: ['sbx/**'] and --push-remote", async () => {
    const r = repo();
    commit(r, { ".github/workflows/ci.yml": "on: [push]\n", ".github/workflows/release.yml": "on:\n  push:\n    tags: ['v*']\n", ".gitlab-ci.yml": "t: {script: [x]}\n" });
    const c = await checkPushWorkflows(exec, r);
    expect(c.status).toBe("warn");
    expect(c.detail).toContain(".github/workflows/ci.yml");
    expect(c.detail).not.toContain("release.yml");
    expect(c.detail).toContain(".gitlab-ci.yml");
    expect(c.fix).toContain("branches-ignore: ['sbx/**']");
    expect(c.fix).toContain("--push-remote");
  });

  test("workflows that skip sandbox branches, or none at all, are ok; the remote's default branch is what is read", async () => {
    const r = repo();
    expect((await checkPushWorkflows(exec, r)).status).toBe("ok");
    commit(r, { ".github/workflows/ci.yml": "on:\n  push:\n    branches-ignore: ['sbx/**']\n" });
    expect((await checkPushWorkflows(exec, r)).status).toBe("ok");
    // The person's checkout may differ; the forge runs what its default branch has (refs/remotes/origin/HEAD).
    Bun.spawnSync(["git", "-C", r, "update-ref", "refs/remotes/origin/main", "HEAD"]);
    Bun.spawnSync(["git", "-C", r, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"]);
    commit(r, { ".github/workflows/ci.yml": "on: push\n" });
    expect((await checkPushWorkflows(exec, r)).status).toBe("ok");
  });
});

describe("doctor per repo", () => {
  test("a store the alternates list names but that is gone fails, with the line to remove; present ones are ok", () => {
    const r = repo();
    mkdirSync(join(r, ".git", "sbx", "a.git", "objects"), { recursive: true });
    appendFileSync(join(r, ".git", "objects", "info", "alternates"), "/users/own/alternate\n../sbx/a.git/objects\n");
    expect(checkStores(r)).toMatchObject({ status: "ok", detail: `${r}: 1 store(s), all present` });
    appendFileSync(join(r, ".git", "objects", "info", "alternates"), "../sbx/gone.git/objects\n");
    const c = checkStores(r);
    expect(c.status).toBe("fail");
    expect(c.fix).toContain("../sbx/gone.git/objects");
    // The store of removed sandboxes' kept work is checked the same way.
    const q = repo();
    appendFileSync(join(q, ".git", "objects", "info", "alternates"), "../sbx/_retired.git/objects\n");
    expect(checkStores(q)).toMatchObject({ status: "fail" });
    mkdirSync(join(q, ".git", "sbx", "_retired.git", "objects"), { recursive: true });
    expect(checkStores(q)).toMatchObject({ status: "ok" });
  });

  test("a sandbox-* remote an older sbx added is a warning with the command that drops it (refs kept)", async () => {
    const r = repo();
    expect((await checkSandboxRemotes(exec, r)).status).toBe("ok");
    Bun.spawnSync(["git", "-C", r, "remote", "add", "sandbox-old", "/x/clone"]);
    const c = await checkSandboxRemotes(exec, r);
    expect(c.status).toBe("warn");
    expect(c.fix).toContain(`git -C ${r} config --remove-section remote.sandbox-old`);
  });

  test("the token each remote gets, by name and source, never its value", async () => {
    expect(tokenReport("git@github.com:o/r.git", {}, { GH_TOKEN: "v1" })).toEqual({ status: "ok", text: "git@github.com:o/r.git: GH_TOKEN from the sbx secrets file" });
    expect(tokenReport("https://github.com/o/r", { GITHUB_TOKEN: "v" }, {}).text).toContain("GITHUB_TOKEN from the environment");
    expect(tokenReport("https://ghe.example.com/o/r", {}, { GIT_TOKEN_GHE_EXAMPLE_COM: "v" }).text).toContain("GIT_TOKEN_GHE_EXAMPLE_COM");
    expect(tokenReport("https://ghe.example.com/o/r", {}, {})).toMatchObject({ status: "warn" });
    // ssh remotes: the host's agent, said either way; a github ssh remote with a token goes over https.
    expect(tokenReport("git@ghe.example.com:o/r.git", {}, {})).toMatchObject({ status: "warn" });
    expect(tokenReport("git@ghe.example.com:o/r.git", {}, {}).text).toContain("no SSH_AUTH_SOCK");
    expect(tokenReport("git@ghe.example.com:o/r.git", { SSH_AUTH_SOCK: "/a" }, {})).toMatchObject({ status: "ok" });
    expect(tokenReport("git@github.com:o/r.git", { SSH_AUTH_SOCK: "/a" }, {}).text).toContain("over ssh with the host's agent");
    expect(tokenReport("git@github.com:o/r.git", {}, { GH_TOKEN: "v" }).text).toContain("GH_TOKEN from the sbx secrets file");
    expect(tokenReport("svn://x/y", {}, {})).toMatchObject({ status: "warn" });
    const r = repo();
    Bun.spawnSync(["git", "-C", r, "remote", "add", "origin", "https://github.com/o/r.git"]);
    const c = await checkTokens(exec, r, {}, { GH_TOKEN: "the-value-itself" });
    expect(c.status).toBe("ok");
    expect(c.detail).toContain("origin https://github.com/o/r.git: GH_TOKEN");
    expect(c.detail).not.toContain("the-value-itself");
  });
});
