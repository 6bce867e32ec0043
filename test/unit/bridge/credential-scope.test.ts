// credential-scope in the bridge's policy: a repository URL the sandbox names is judged on the one path the forge will
// read, so a spelling that matches the host repo's remote (or an added repository) while git would send something else
// never gets the token.
import { describe, expect, test } from "bun:test";
import { checkRepository } from "../../../src/bridge/git-policy";
import { decideGh } from "../../../src/bridge/gh-policy";
import type { PolicyContext } from "../../../src/bridge/policy";

const ctx: PolicyContext = {
  remotes: { origin: "https://github.com/me/repo.git" },
  extraRepos: ["https://git.corp.example/team/tool"],
  checkPath: () => ({ ok: false, reason: "no paths here" }),
  options: { ghApi: false, ghGist: false },
};

describe("credential-scope: a repository URL has one reading, or no token and no request", () => {
  const refused = [
    "https://github.com/me/repo?x=1",
    "https://github.com/me/repo.git?service=git-receive-pack",
    "https://github.com/me/repo#x",
    "https://github.com/other/x/../../me/repo",
    "https://github.com/me/repo/%2e%2e/%2e%2e/other/repo",
    "https://github.com/me\\repo",
    "https://github.com/me//repo",
    "https://github.com/me/repo;x",
    "https://git.corp.example/team/tool/../../other/secret",
    "https://git.corp.example/team/tool?x",
  ];
  for (const url of refused) {
    test(url, () => {
      const d = checkRepository(url, ctx, "/w");
      expect(d.ok).toBe(false);
    });
  }
  test("the remote and the added repository as written are theirs (control)", () => {
    for (const url of ["https://github.com/me/repo", "https://github.com/me/repo.git", "https://GitHub.com/me/repo/", "https://git.corp.example/team/tool"]) {
      const d = checkRepository(url, ctx, "/w");
      expect({ url, own: d.ok && d.plan.own }).toEqual({ url, own: true });
    }
    const other = checkRepository("https://github.com/someone/else", ctx, "/w");
    expect(other.ok && other.plan.own).toBe(false);
  });
});

describe("credential-scope: gh api's path is judged on the one reading GitHub acts on", () => {
  const apiCtx: PolicyContext = { ...ctx, checkPath: (p) => ({ ok: true, hostPath: p }), options: { ghApi: true, ghGist: false } };
  const refused = [
    "repos/{owner}/{repo}/%2e%2e/%2e%2e/user",
    "repos/{owner}/{repo}/%2E%2E/%2E%2E/orgs/acme/members",
    "repos/acme/widgets/.%2e/.%2e/user",
    "repos/{owner}/{repo}/pulls%2f..%2f..%2f..%2fuser",
    "repos/{owner}/{repo}/%252e%252e/user",
    "repos/{owner}/{repo}//pulls",
  ];
  for (const path of refused) {
    test(path, () => {
      expect(decideGh(["api", path], "/w", apiCtx).ok).toBe(false);
    });
  }
  test("this repository's paths as gh's users write them still go (control)", () => {
    for (const path of ["repos/{owner}/{repo}/pulls", "repos/acme/widgets/issues?state=open&per_page=5", "/repos/{owner}/{repo}/commits/main/status"]) {
      expect({ path, ok: decideGh(["api", path], "/w", apiCtx).ok }).toEqual({ path, ok: true });
    }
  });
});
