// Which workflows a sandbox's push starts with the repository's secrets, read conservatively: GitHub's own rules for
// `on: push` filters, and anything sbx cannot read counts as running.
import { describe, expect, test } from "bun:test";
import { filterPattern, isWorkflowFile, pushTrigger, pushWorkflowNote, type PushRef } from "../../../src/core/push-workflows";

const BR: PushRef = { kind: "branch", name: "sbx/demo/fix-1" };
const runs = (yaml: string, ref: PushRef = BR, creates = false) => pushTrigger(Bun.YAML.parse(yaml), ref, creates);

describe("a push's workflows, read conservatively", () => {
  test("on: push in every form, and on: create for a new branch, run", () => {
    for (const y of ["on: push", "on: [push, pull_request]", "on:\n  push:\n", "on:\n  push: {}\n", "on:\n  push:\n    paths: ['src/**']\n", "true: push"]) {
      expect([y, runs(y)]).toEqual([y, expect.any(String)]);
    }
    expect(runs("on: create", BR, true)).toContain("on: create");
    expect(runs("on: create", BR, false)).toBeNull();
  });

  test("branch filters as GitHub reads them", () => {
    const yes = [
      "on:\n  push:\n    branches: ['**']",
      "on:\n  push:\n    branches: ['sbx/**']",
      "on:\n  push:\n    branches: ['sbx/*/fix-*']",
      "on:\n  push:\n    branches: ['sbx/demo/fix-[0-9]']",
      "on:\n  push:\n    branches: 'sbx/**'",
      "on:\n  push:\n    branches: ['main', '!sbx/**', 'sbx/demo/**']",
      "on:\n  push:\n    branches-ignore: ['main']",
      "on:\n  push:\n    branches-ignore: ['sbx/*']",
      "on:\n  push:\n    branches-ignore: ['sbx/other/**']",
    ];
    for (const y of yes) expect([y, runs(y)]).toEqual([y, expect.any(String)]);
    const no = [
      "on:\n  push:\n    branches: [main]",
      "on:\n  push:\n    branches: ['releases/**']",
      "on:\n  push:\n    branches: ['sbx/*']",
      "on:\n  push:\n    branches: ['**', '!sbx/**']",
      "on:\n  push:\n    branches-ignore: ['sbx/**']",
      "on:\n  push:\n    branches-ignore: ['**']",
      "on:\n  push:\n    tags: ['v*']",
      "on: pull_request",
      "on:\n  workflow_dispatch:\n",
    ];
    for (const y of no) expect([y, runs(y)]).toEqual([y, null]);
  });

  test("tags: a tag push runs tag filters, and branch-only filters leave it out", () => {
    const tag: PushRef = { kind: "tag", name: "v1.2" };
    expect(runs("on:\n  push:\n    tags: ['v*']", tag)).toContain("includes v1.2");
    expect(runs("on:\n  push:\n    branches: ['**']", tag)).toBeNull();
    expect(runs("on: push", tag)).toContain("every branch and tag");
  });

  test("what sbx cannot read counts as running", () => {
    expect(pushTrigger(new Error("bad YAML"), BR)).toContain("may run");
    expect(pushTrigger("just a string", BR)).toContain("may run");
    expect(runs("on:\n  push:\n    branches: {a: 1}")).toContain("may run");
    expect(runs("on:\n  push:\n    branches: ['sbx/[demo']")).toEqual(expect.any(String));
    expect(runs("on:\n  push:\n    branches-ignore: ['sbx/[demo']")).toEqual(expect.any(String));
  });

  test("filter patterns: * within a segment, ** anything, ? and + of the preceding character", () => {
    expect(filterPattern("sbx/*")!.test("sbx/a/b")).toBe(false);
    expect(filterPattern("sbx/**")!.test("sbx/a/b")).toBe(true);
    expect(filterPattern("v1.?0")!.test("v1.0")).toBe(true);
    expect(filterPattern("v1.?0")!.test("v1x0")).toBe(false);
    expect(filterPattern("a+b")!.test("aaab")).toBe(true);
    expect(filterPattern("?x")).toBeNull();
  });

  test("workflow files: .yml/.yaml directly in GitHub's, Gitea's or Forgejo's dir", () => {
    for (const p of [".github/workflows/ci.yml", ".gitea/workflows/a.yaml", ".forgejo/workflows/b.yml"]) expect(isWorkflowFile(p)).toBe(true);
    for (const p of [".github/workflows/sub/ci.yml", ".github/workflows/README.md", "x/.github/workflows/ci.yml"]) expect(isWorkflowFile(p)).toBe(false);
  });

  test("the note names each workflow and both ways out", () => {
    const note = pushWorkflowNote([{ path: ".github/workflows/ci.yml", why: "on: push, for every branch" }], [".gitlab-ci.yml"], "demo").join("\n");
    expect(note).toContain(".github/workflows/ci.yml: on: push, for every branch");
    expect(note).toContain(".gitlab-ci.yml");
    expect(note).toContain("branches-ignore: ['sbx/**']");
    expect(note).toContain("sbx bridge demo --push-remote");
    expect(pushWorkflowNote([], [])).toEqual([]);
  });
});
