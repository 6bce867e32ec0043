// sbx doctor per repo: stores listed but gone, remotes an older sbx added into clones, and the token each remote gets.
import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkSandboxRemotes, checkStores, checkTokens, tokenReport } from "../../../src/doctor/repo-checks";
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
