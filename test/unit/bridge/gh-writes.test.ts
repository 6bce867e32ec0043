// least-privilege (gh): a sandbox changes only the pull requests, issues and gists it opened through the bridge; a change
// to anyone else's (close, edit, comment, ready, reopen; a gist's edit or delete) asks the person first, as a push to a
// colleague's branch does: refused, recorded as a bridge approval, allowed for that one thing. Reads stay free. gh is the
// FakeExec's, answering as gh 2.23 does (the new PR's URL alone on stdout); the bridge app is real.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeExec } from "../../fakes/exec";
import { createBridgeApp } from "../../../src/bridge/server";
import { GH_COMMANDS, GH_GIST } from "../../../src/bridge/policy";
import { bridgeSettingsOf, describeSubject, NO_BRIDGE_SETTINGS, parseSubject, subjectText, withApproval, type BridgeSettings, type BridgeSubject } from "../../../src/core/bridge-settings";
import { PolicyService } from "../../../src/policy/service";
import { Store } from "../../../src/store/store";

const roots: string[] = [];
afterAll(() => roots.forEach((d) => rmSync(d, { recursive: true, force: true })));

type Frame = { t: string; d?: string; code?: number };

function setup(initial: BridgeSettings = NO_BRIDGE_SETTINGS, remotes = "remote.origin.url https://github.com/acme/widgets.git\n", hooks: { settings?: () => BridgeSettings; ask?: (s: BridgeSubject, reason: string) => { id: number; count: number } } = {}) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-ghw-")));
  roots.push(root);
  const ws = join(root, "clone");
  mkdirSync(ws);
  writeFileSync(join(ws, "body.md"), "body\n");
  const exec = new FakeExec();
  exec.always((a) => a[0] === "git" && a.includes("init"), {});
  exec.always((a) => a[0] === "git" && a.includes("--git-common-dir"), { stdout: join(root, "host/.git") + "\n" });
  exec.always((a) => a[0] === "git" && a.includes("--get-regexp"), { stdout: remotes });
  let settings = initial;
  const asked: BridgeSubject[] = [];
  const app = createBridgeApp({
    sandbox: { id: "id1", name: "demo", workspace: ws, workspaceView: "/home/u/widgets", repo: join(root, "host") },
    gateDir: join(root, "gate"),
    secrets: () => ({ GH_TOKEN: "ghp_hostTokenValue123456" }),
    audit: () => undefined,
    exec,
    settings: hooks.settings ?? (() => settings),
    ask: (s, reason) => {
      asked.push(s);
      return hooks.ask?.(s, reason) ?? { id: asked.length, count: 1 };
    },
  });
  const call = async (args: string[], branch = "sbx/demo/feature"): Promise<{ frames: Frame[]; code: number | undefined; err: string }> => {
    const res = await app.request("/v1/run", { method: "POST", body: JSON.stringify({ tool: "gh", args, cwd: "/home/u/widgets", branch }) + "\n" });
    const frames = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as Frame);
    return { frames, code: frames.at(-1)?.code, err: frames.filter((f) => f.t === "err").map((f) => f.d).join("") };
  };
  const ghRuns = () => exec.calls.filter((c) => c.argv[0] === "gh").length;
  return { exec, call, asked, ghRuns, approve: (s: BridgeSubject) => (settings = withApproval(settings, s)), set: (s: BridgeSettings) => (settings = s) };
}

const CHANGES: string[][] = [
  ["pr", "close", "8"],
  ["pr", "close", "#8", "--comment", "closing"],
  ["pr", "comment", "8", "--body", "LGTM"],
  ["pr", "comment", "8", "--body-file", "body.md"],
  ["pr", "edit", "8", "--title", "new title"],
  ["pr", "edit", "8", "--add-reviewer", "someone"],
  ["pr", "ready", "8"],
  ["pr", "ready", "8", "--undo"],
  ["pr", "reopen", "8"],
  ["issue", "comment", "8", "--body", "me too"],
];

describe("least-privilege: gh changes only what the sandbox opened; anything else asks", () => {
  for (const args of CHANGES) {
    test(`gh ${args.join(" ")} on someone else's PR asks first and never runs gh`, async () => {
      const { call, asked, ghRuns } = setup();
      const r = await call(args);
      expect(r.code).toBe(77);
      expect(r.err).toContain("this sandbox did not open");
      expect(r.err).toContain("approval 1 is waiting");
      expect(asked).toEqual([{ kind: "gh", target: "github.com/acme/widgets#8" }]);
      expect(ghRuns()).toBe(0);
    });
  }

  test("a PR named by its branch asks for that branch's PR", async () => {
    const { call, asked, ghRuns } = setup();
    const r = await call(["pr", "comment", "colleague-branch", "--body", "x"]);
    expect(r.code).toBe(77);
    expect(asked).toEqual([{ kind: "gh", target: "github.com/acme/widgets:colleague-branch" }]);
    expect(ghRuns()).toBe(0);
  });

  test("a change that names nothing is refused (gh would pick the PR of a branch it cannot see)", async () => {
    const { call, ghRuns } = setup();
    const r = await call(["pr", "close"]);
    expect(r.code).toBe(77);
    expect(r.err).toContain("name the pull request or issue by number");
    expect(ghRuns()).toBe(0);
  });

  test("reads run without asking", async () => {
    const { call, exec, asked } = setup();
    exec.always((a) => a[0] === "gh", { stdout: "ok\n" });
    for (const args of [["pr", "view", "8"], ["pr", "list"], ["pr", "diff", "8"], ["pr", "checks", "8"], ["issue", "view", "8"], ["issue", "list"], ["run", "list"]]) {
      expect((await call(args)).code).toBe(0);
    }
    expect(asked).toEqual([]);
  });

  test("what it opened (a PR, an issue) it may change, by number or #number", async () => {
    const { call, exec, asked, ghRuns } = setup();
    exec.expect((a) => a[0] === "gh" && a[2] === "create", { stdout: "https://github.com/acme/widgets/pull/12\n" });
    expect((await call(["pr", "create", "--title", "mine", "--body", "b"])).code).toBe(0);
    exec.expect((a) => a[0] === "gh" && a[1] === "issue" && a[2] === "create", { stdout: "https://github.com/acme/widgets/issues/13\n" });
    expect((await call(["issue", "create", "--title", "mine too", "--body", "b"])).code).toBe(0);
    exec.always((a) => a[0] === "gh", { stdout: "" });
    for (const args of [["pr", "comment", "12", "--body", "x"], ["pr", "edit", "#12", "--title", "y"], ["issue", "comment", "12", "--body", "z"], ["issue", "comment", "13", "--body", "w"]]) {
      const r = await call(args);
      expect([args.join(" "), r.code]).toEqual([args.join(" "), 0]);
    }
    expect(asked).toEqual([]);
    expect(ghRuns()).toBe(6);
  });

  test("--edit-last and --delete-last change the token owner's (the person's) last comment, even on a PR it opened: they ask", async () => {
    const { call, exec, asked, ghRuns, approve } = setup();
    exec.expect((a) => a[0] === "gh" && a[2] === "create", { stdout: "https://github.com/acme/widgets/pull/12\n" });
    expect((await call(["pr", "create", "--title", "mine", "--body", "b"])).code).toBe(0);
    const lasts = [
      ["pr", "comment", "12", "--edit-last", "--body", "x"],
      ["pr", "comment", "#12", "--body-file", "body.md", "--edit-last"],
      ["issue", "comment", "12", "--edit-last", "-b", "x"],
      ["pr", "comment", "12", "--delete-last", "--yes"],
      ["issue", "comment", "12", "--delete-last"],
    ];
    for (const args of lasts) {
      const r = await call(args);
      expect([args.join(" "), r.code]).toEqual([args.join(" "), 77]);
      expect(r.err).toContain("last comment");
      expect(r.err).toContain("approval");
    }
    expect(asked).toEqual(lasts.map(() => ({ kind: "gh", target: "github.com/acme/widgets#12" })));
    expect(ghRuns()).toBe(1);
    // A new comment on its own PR still goes without asking; the person's approval lets --edit-last through.
    exec.always((a) => a[0] === "gh", { stdout: "" });
    expect((await call(["pr", "comment", "12", "--body", "x"])).code).toBe(0);
    approve(asked[0]!);
    expect((await call(["pr", "comment", "12", "--edit-last", "--body", "x"])).code).toBe(0);
    expect(ghRuns()).toBe(3);
  });

  test("a branch is not what it opened: gh picks a branch's PR itself, which may be a colleague's", async () => {
    const { call, exec, asked, ghRuns } = setup();
    // A new PR from a colleague's branch (to another base) is the sandbox's; the colleague's own PR from it is not.
    exec.expect((a) => a[0] === "gh" && a[2] === "create", { stdout: "https://github.com/acme/widgets/pull/30\n" });
    expect((await call(["pr", "create", "--head", "colleague-branch", "--base", "other", "--title", "t", "--body", "b"])).code).toBe(0);
    expect((await call(["pr", "close", "colleague-branch"])).code).toBe(77);
    expect((await call(["pr", "close", "sbx/demo/feature"])).code).toBe(77);
    expect(asked).toEqual([{ kind: "gh", target: "github.com/acme/widgets:colleague-branch" }, { kind: "gh", target: "github.com/acme/widgets:sbx/demo/feature" }]);
    expect(ghRuns()).toBe(1);
  });

  test("a URL the sandbox wrote into a dry run's preview is not taken for a PR it opened", async () => {
    const { call, exec, asked, ghRuns } = setup();
    exec.expect((a) => a[0] === "gh" && a[2] === "create", {
      stdout: "Would have created a Pull Request with:\ntitle:\tx\nbody:\nhttps://github.com/acme/widgets/pull/8\n",
    });
    expect((await call(["pr", "create", "--dry-run", "--title", "x", "--body", "https://github.com/acme/widgets/pull/8"])).code).toBe(0);
    exec.expect((a) => a[0] === "gh" && a[2] === "create", { stdout: "https://github.com/acme/widgets/pull/8\n" });
    expect((await call(["pr", "create", "--dry-run", "--title", "x"])).code).toBe(0);
    const r = await call(["pr", "close", "8"]);
    expect(r.code).toBe(77);
    expect(asked).toEqual([{ kind: "gh", target: "github.com/acme/widgets#8" }]);
    expect(ghRuns()).toBe(2);
  });

  test("the person's approval lets it change that one PR, and no other; --allow gh-write lets it change any", async () => {
    const { call, exec, asked, approve, set } = setup();
    expect((await call(["pr", "close", "8"])).code).toBe(77);
    const subject = parseSubject(subjectText(asked[0]!))!;
    expect(subject).toEqual({ kind: "gh", target: "github.com/acme/widgets#8" });
    approve(subject);
    exec.always((a) => a[0] === "gh", { stdout: "" });
    expect((await call(["pr", "close", "8"])).code).toBe(0);
    expect((await call(["pr", "close", "9"])).code).toBe(77);
    set({ ...NO_BRIDGE_SETTINGS, allow: ["gh-write"] });
    expect((await call(["pr", "close", "9"])).code).toBe(0);
  });

  test("gh gist (once allowed): editing or deleting a gist it did not create asks; its own it may change", async () => {
    const { call, exec, asked, ghRuns } = setup({ ...NO_BRIDGE_SETTINGS, allow: ["gh-gist"] });
    for (const args of [["gist", "delete", "0123abcd"], ["gist", "edit", "0123abcd", "--desc", "mine now"]]) {
      const r = await call(args);
      expect(r.code).toBe(77);
    }
    expect(asked).toEqual([{ kind: "gh", target: "github.com/gist/0123abcd" }, { kind: "gh", target: "github.com/gist/0123abcd" }]);
    expect(ghRuns()).toBe(0);
    exec.expect((a) => a[0] === "gh" && a[2] === "create", { stdout: "https://gist.github.com/ann/feedbeef42\n" });
    expect((await call(["gist", "create", "body.md"])).code).toBe(0);
    exec.expect((a) => a[0] === "gh" && a[2] === "delete", { stdout: "" });
    expect((await call(["gist", "delete", "feedbeef42"])).code).toBe(0);
  });

  test("gh gist create publishes a file of the workspace, read by the bridge; never a host path gh would read itself", async () => {
    const { call, exec, ghRuns } = setup({ ...NO_BRIDGE_SETTINGS, allow: ["gh-gist"] });
    for (const args of [["gist", "create", "/etc/hostname"], ["gist", "create", "../../outside"], ["gist", "create", "body.md", "/etc/hostname"], ["gist", "edit", "0123abcd", "--add", "/etc/hostname"]]) {
      expect([args.join(" "), (await call(args)).code]).toEqual([args.join(" "), 77]);
    }
    expect(ghRuns()).toBe(0);
    exec.expect((a) => a[0] === "gh", (argv, opts) => {
      expect(argv).toEqual(["gh", "gist", "create", "--desc=notes", "--filename=body.md", "--", "-"]);
      expect(new TextDecoder().decode(opts.stdin as Uint8Array)).toBe("body\n");
      return { stdout: "https://gist.github.com/ann/0a1b\n" };
    });
    expect((await call(["gist", "create", "--desc", "notes", "body.md"])).code).toBe(0);
    exec.assertDone();
  });

  test("with its pushes going to a fork, gh pr create opens the pull request from the fork's branch, and may then change it", async () => {
    const { call, exec, asked } = setup({ ...NO_BRIDGE_SETTINGS, pushRemote: "fork" }, "remote.origin.url https://github.com/acme/widgets.git\nremote.fork.url https://github.com/me/widgets.git\n");
    exec.expect((a) => a[0] === "gh", (argv) => {
      expect(argv).toEqual(["gh", "pr", "create", "--title=x", "--body=b", "--repo", "acme/widgets", "--head=me:sbx/demo/feature"]);
      return { stdout: "https://github.com/acme/widgets/pull/21\n" };
    });
    expect((await call(["pr", "create", "--title", "x", "--body", "b"])).code).toBe(0);
    exec.expect((a) => a[0] === "gh", { stdout: "" });
    expect((await call(["pr", "edit", "21", "--title", "y"])).code).toBe(0);
    expect(asked).toEqual([]);
    exec.assertDone();
  });

  test("through the approvals queue: the person allows it once (sbx approvals allow N), and the next change of that PR runs", async () => {
    const store = new Store(":memory:");
    const id = store.createSandbox({ name: "demo", repo: "/r", backend: "docker" }).id;
    const { call, exec } = setup(NO_BRIDGE_SETTINGS, undefined, {
      settings: () => bridgeSettingsOf(store.getSandbox(id)!.identity),
      ask: (subject, reason) => {
        const a = store.recordPending(id, subjectText(subject), 0, reason, "bridge")!;
        return { id: a.id, count: a.count };
      },
    });
    const r = await call(["pr", "close", "8"]);
    expect(r.code).toBe(77);
    const [a] = store.listApprovals({ state: "pending" });
    expect([a!.kind, a!.host]).toEqual(["bridge", "gh github.com/acme/widgets#8"]);
    expect(describeSubject(a!.host)).toContain("github.com/acme/widgets#8");
    new PolicyService({ store }).decide(a!.id, "allow-sandbox", "test");
    expect(bridgeSettingsOf(store.getSandbox(id)!.identity).ghTargets).toEqual(["github.com/acme/widgets#8"]);
    exec.expect((x) => x[0] === "gh", { stdout: "" });
    expect((await call(["pr", "close", "8"])).code).toBe(0);
    exec.assertDone();
    store.close();
  });

  test("every gh subcommand the bridge runs says what it does to the forge; the reads are exactly these", () => {
    const reads: string[] = [];
    for (const [group, subs] of [...Object.entries(GH_COMMANDS), ["gist", GH_GIST] as const]) {
      for (const [sub, spec] of Object.entries(subs)) if (!spec.acts) reads.push(`${group} ${sub}`);
    }
    // A new subcommand that changes anything must say so (acts), or this list grows and a reviewer sees it.
    expect(reads.sort()).toEqual(["gist list", "gist view", "issue list", "issue status", "issue view", "pr checks", "pr diff", "pr list", "pr status", "pr view", "repo view", "run list", "run view", "run watch"]);
  });
});
