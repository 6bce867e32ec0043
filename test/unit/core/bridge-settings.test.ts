// The bridge's per-sandbox switches and the lists they guard.
import { describe, expect, test } from "bun:test";
import { bridgeSettingsOf, isCiPath, isProtectedBranch } from "../../../src/core/bridge-settings";

describe("bridge settings", () => {
  test("CI and automation paths", () => {
    for (const p of [".github/workflows/ci.yml", ".github/actions/x/action.yml", ".gitlab-ci.yml", ".circleci/config.yml", "Jenkinsfile", "ci/Jenkinsfile", ".buildkite/pipeline.yml", "azure-pipelines.yml", ".pre-commit-config.yaml", "CODEOWNERS", ".github/CODEOWNERS"]) {
      expect(isCiPath(p)).toBe(true);
    }
    for (const p of ["src/workflows/x.ts", ".github/ISSUE_TEMPLATE.md", "README.md", "docs/ci.md", "x.gitlab-ci.yml"]) expect(isCiPath(p)).toBe(false);
  });

  test("protected branches: the default, main, master, and patterns", () => {
    const s = { allow: [], protect: ["release/*", "prod"], repos: [] };
    for (const b of ["develop", "main", "master", "release/1.2", "prod"]) expect(isProtectedBranch(b, "develop", s)).toBe(true);
    for (const b of ["feature", "release/1/2", "production", "sbx/agent/x"]) expect(isProtectedBranch(b, "develop", s)).toBe(false);
  });

  test("a stored identity without settings (or with a bad one) has the defaults", () => {
    expect(bridgeSettingsOf({})).toEqual({ allow: [], protect: [], repos: [] });
    expect(bridgeSettingsOf({ bridge: { allow: ["root"] } })).toEqual({ allow: [], protect: [], repos: [] });
    expect(bridgeSettingsOf({ bridge: { allow: ["delete"] } })).toEqual({ allow: ["delete"], protect: [], repos: [] });
    expect(bridgeSettingsOf({ bridge: { repos: ["https://x:tok@github.com/o/r"] } })).toEqual({ allow: [], protect: [], repos: [] });
  });
});
