// What a sandbox's bridge may do beyond the default: the per-sandbox switches `sbx bridge NAME --allow …` sets. Pure.
import { z } from "zod";

/** The switches, all off by default. */
export const BRIDGE_ALLOWS = ["force-push", "delete", "ci-files", "gh-api", "gh-gist"] as const;
export type BridgeAllow = (typeof BRIDGE_ALLOWS)[number];

/** What each switch lets the sandbox do (for help and refusals). */
export const ALLOW_MEANS: Record<BridgeAllow, string> = {
  "force-push": "force-push (or lease) to a protected branch: the default branch, main, master, or one named with --protect",
  delete: "delete a branch or tag on the remote that this sandbox did not create",
  "ci-files": "push commits that change CI or automation files (.github/workflows, .gitlab-ci.yml, CODEOWNERS, …)",
  "gh-api": "run `gh api` (GET of this repository's paths only)",
  "gh-gist": "run `gh gist` (publishes files)",
};

export const BridgeSettingsSchema = z.object({
  allow: z.array(z.enum(BRIDGE_ALLOWS)).default([]),
  /** More protected branches (names, `*` matches within a path segment), beside the default branch, main and master. */
  protect: z.array(z.string().min(1).max(200)).default([]),
  /** More repositories the token may be sent to (https URLs), beside the host repo's own remotes. */
  repos: z.array(z.string().regex(/^https:\/\/[^\s@/]+\/[^\s@]+$/)).default([]),
});
export type BridgeSettings = z.infer<typeof BridgeSettingsSchema>;

export const NO_BRIDGE_SETTINGS: BridgeSettings = { allow: [], protect: [], repos: [] };

/** A stored identity's settings (a sandbox made before them has none: the defaults). */
export function bridgeSettingsOf(identity: Record<string, unknown>): BridgeSettings {
  const p = BridgeSettingsSchema.safeParse(identity.bridge ?? {});
  return p.success ? p.data : NO_BRIDGE_SETTINGS;
}

/** Paths whose change a push must not carry by default: what runs with the repository's own credentials on the forge. */
export const CI_PATHS: readonly string[] = [
  ".github/workflows/",
  ".github/actions/",
  ".gitlab-ci.yml",
  ".gitlab/ci/",
  ".circleci/",
  "Jenkinsfile",
  ".buildkite/",
  "azure-pipelines.yml",
  ".azure-pipelines/",
  ".pre-commit-config.yaml",
  "CODEOWNERS",
  ".github/CODEOWNERS",
  "docs/CODEOWNERS",
  ".gitlab/CODEOWNERS",
];

/** Whether a repo path is a CI or automation file (a dir entry covers what is under it). */
export function isCiPath(path: string): boolean {
  return CI_PATHS.some((c) => {
    if (c.endsWith("/")) return path.startsWith(c);
    if (c === "Jenkinsfile") return path === c || path.endsWith("/Jenkinsfile");
    return path === c;
  });
}

/** Whether `branch` is protected: the remote's default branch, main, master, or a `protect` pattern. */
export function isProtectedBranch(branch: string, defaultBranch: string | undefined, settings: BridgeSettings): boolean {
  if (branch === defaultBranch || branch === "main" || branch === "master") return true;
  return settings.protect.some((p) => new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}$`).test(branch));
}
