// The bridge's per-sandbox switches and the lists they guard.
import { describe, expect, test } from "bun:test";
import { bridgeSettingsOf, describeSubject, isCiPath, isProtectedBranch, mayPushTo, NO_BRIDGE_SETTINGS, parseSubject, subjectText, withApproval } from "../../../src/core/bridge-settings";

describe("bridge settings", () => {
  test("CI and automation paths", () => {
    for (const p of [".github/workflows/ci.yml", ".github/actions/x/action.yml", ".gitlab-ci.yml", ".circleci/config.yml", "Jenkinsfile", "ci/Jenkinsfile", ".buildkite/pipeline.yml", "azure-pipelines.yml", ".pre-commit-config.yaml", "CODEOWNERS", ".github/CODEOWNERS"]) {
      expect(isCiPath(p)).toBe(true);
    }
    for (const p of ["src/workflows/x.ts", ".github/ISSUE_TEMPLATE.md", "README.md", "docs/ci.md", "x.gitlab-ci.yml"]) expect(isCiPath(p)).toBe(false);
  });

  test("least-privilege: every forge's and CI service's files, where each reads them, in any case or spelling", () => {
    const ci = [
      // GitHub, Gitea, Forgejo (Actions), their actions wherever a workflow names one, and the automation beside them
      ".github/workflows/ci.yml", ".github/workflows/sub/x.yaml", ".gitea/workflows/ci.yaml", ".forgejo/workflows/ci.yml", ".gitea/actions/a/action.yml",
      "tools/setup/action.yml", "action.yaml", ".github/dependabot.yml", "renovate.json", ".github/renovate.json5", ".renovaterc",
      // GitLab, Bitbucket, Drone, Woodpecker, Travis, AppVeyor, Cirrus, Azure, Jenkins, CircleCI, Buildkite
      ".gitlab-ci.yml", "services/api/.gitlab-ci.yml", ".gitlab/ci/build.yml", ".gitlab/agents/prod/config.yaml", "bitbucket-pipelines.yml",
      ".drone.yml", ".drone.jsonnet", ".woodpecker.yml", ".woodpecker.yaml", ".woodpecker/build.yml", ".travis.yml", "appveyor.yml", ".appveyor.yml",
      ".cirrus.yml", ".cirrus.star", "azure-pipelines.yml", "build/azure-pipelines-release.yaml", ".azure-pipelines/x.yml", ".vsts-ci.yml",
      "Jenkinsfile", "ci/Jenkinsfile", "Jenkinsfile.release", "deploy.jenkinsfile", ".circleci/config.yml", ".buildkite/pipeline.yml", "buildkite.yml",
      // others that run with the repository's secrets on a push
      ".semaphore/semaphore.yml", ".build.yml", ".builds/arch.yml", ".tekton/push.yaml", ".teamcity/settings.kts", "cloudbuild.yaml", "buildspec.yml",
      "bitrise.yml", "codemagic.yaml", ".zuul.yaml", "zuul.d/jobs.yaml", ".onedev-buildspec.yml", "x.gocd.yaml", ".devcontainer/devcontainer.json",
      ".devcontainer.json", "netlify.toml", "vercel.json", ".pre-commit-config.yaml",
      // who must approve
      "CODEOWNERS", ".github/CODEOWNERS", "docs/CODEOWNERS", ".gitlab/CODEOWNERS", ".gitea/CODEOWNERS", ".forgejo/CODEOWNERS", ".bitbucket/CODEOWNERS",
      // spellings a case-folding filesystem (macOS, Windows) takes as one of the above
      ".GITHUB/WORKFLOWS/CI.YML", ".GitLab-CI.yml", "JENKINSFILE", "codeOwners", ".git\u200chub/workflows/x.yml", ".github\ufeff/workflows/x.yml",
      ".github./workflows/x.yml", ".travis.yml.", "Bitbucket-Pipelines.yml ",
      // a CI dir or its parent as a symlink or submodule: the forge may read through it
      ".github", ".github/workflows", ".circleci", ".GITEA",
    ];
    for (const p of ci) expect([p, isCiPath(p)]).toEqual([p, true]);
    const not = ["docs/travis.md", "src/action.ts", "vendor/x/.github/workflows/ci.yml", "lib/.circleci/config.yml", "jenkins/README", "actions.yml", "workflows/ci.yml"];
    for (const p of not) expect([p, isCiPath(p)]).toEqual([p, false]);
  });

  test("protected branches: the default, main, master, and patterns", () => {
    const s = { ...NO_BRIDGE_SETTINGS, protect: ["release/*", "prod"] };
    for (const b of ["develop", "main", "master", "release/1.2", "prod"]) expect(isProtectedBranch(b, "develop", s)).toBe(true);
    for (const b of ["feature", "release/1/2", "production", "sbx/agent/x"]) expect(isProtectedBranch(b, "develop", s)).toBe(false);
  });

  test("a stored identity without settings (or with a bad one) has the defaults", () => {
    expect(bridgeSettingsOf({})).toEqual(NO_BRIDGE_SETTINGS);
    expect(bridgeSettingsOf({ bridge: { allow: ["root"] } })).toEqual(NO_BRIDGE_SETTINGS);
    expect(bridgeSettingsOf({ bridge: { allow: ["delete"] } })).toEqual({ ...NO_BRIDGE_SETTINGS, allow: ["delete"] });
    expect(bridgeSettingsOf({ bridge: { repos: ["https://x:tok@github.com/o/r"] } })).toEqual(NO_BRIDGE_SETTINGS);
  });

  test("pushes without asking: under the prefix (sbx/<name>/ or set), an --allow-push pattern, or anywhere with push-anywhere", () => {
    const s = NO_BRIDGE_SETTINGS;
    expect(mayPushTo("sbx/agent/fix", s, "agent")).toBe(true);
    for (const r of ["main", "feature", "sbx/other/fix", "sbx/agent", "v1.0"]) expect({ r, ok: mayPushTo(r, s, "agent") }).toEqual({ r, ok: false });
    expect(mayPushTo("fix/a", { ...s, pushTo: ["fix/*"] }, "agent")).toBe(true);
    expect(mayPushTo("fix/a/b", { ...s, pushTo: ["fix/*"] }, "agent")).toBe(false);
    expect(mayPushTo("agents/a/x", { ...s, prefix: "agents/a/" }, "agent")).toBe(true);
    expect(mayPushTo("sbx/agent/x", { ...s, prefix: "agents/a/" }, "agent")).toBe(false);
    expect(mayPushTo("main", { ...s, allow: ["push-anywhere"] }, "agent")).toBe(true);
  });

  test("bridge approval subjects: round trip, refusal of anything else, and what approving adds", () => {
    for (const sub of [{ kind: "push", ref: "feature-x" }, { kind: "repo", url: "https://github.com/acme/lib" }] as const) {
      expect(parseSubject(subjectText(sub))).toEqual(sub);
    }
    for (const t of ["push fix/*", "push a..b", "repo http://x/y", "repo https://u:p@h/o/r", "rm -rf", "push "]) expect({ t, s: parseSubject(t) }).toEqual({ t, s: null });
    expect(describeSubject("push main")).toBe("push to main (outside its branch prefix)");
    const once = withApproval(NO_BRIDGE_SETTINGS, { kind: "push", ref: "main" });
    expect(once.pushTo).toEqual(["main"]);
    expect(withApproval(once, { kind: "push", ref: "main" })).toBe(once);
    expect(withApproval(NO_BRIDGE_SETTINGS, { kind: "repo", url: "https://github.com/acme/lib" }).repos).toEqual(["https://github.com/acme/lib"]);
  });
});
