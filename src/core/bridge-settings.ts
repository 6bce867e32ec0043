// What a sandbox's bridge may do beyond the default: the per-sandbox switches `sbx bridge NAME --allow …` sets. Pure.
import { z } from "zod";

/** The switches, all off by default. */
export const BRIDGE_ALLOWS = ["push-anywhere", "force-push", "delete", "ci-files", "gh-api", "gh-gist"] as const;
export type BridgeAllow = (typeof BRIDGE_ALLOWS)[number];

/** What each switch lets the sandbox do (for help and refusals). */
export const ALLOW_MEANS: Record<BridgeAllow, string> = {
  "push-anywhere": "push to any branch or tag, not only under its prefix (sbx/<name>/) or one allowed with --allow-push",
  "force-push": "force-push (or lease) to a protected branch: the default branch, main, master, or one named with --protect",
  delete: "delete a branch or tag on the remote that this sandbox did not create",
  "ci-files": "push commits that change CI or automation files (.github/workflows, .gitlab-ci.yml, CODEOWNERS, …)",
  "gh-api": "run `gh api` (GET of this repository's paths only)",
  "gh-gist": "run `gh gist` (publishes files)",
};

/** A branch or tag name pattern: git's safe characters, `*` for any part of one segment, no `..`. */
export const REF_PATTERN = /^(?!.*\.\.)[A-Za-z0-9._\/*-]{1,200}$/;
/** A branch prefix: one or more segments, ending in `/`. */
const PREFIX = /^(?!.*\.\.)(?:[A-Za-z0-9._-]+\/)+$/;

export const BridgeSettingsSchema = z.object({
  allow: z.array(z.enum(BRIDGE_ALLOWS)).default([]),
  /** More protected branches (names, `*` matches within a path segment), beside the default branch, main and master. */
  protect: z.array(z.string().min(1).max(200)).default([]),
  /** More repositories the token may be sent to (https URLs), beside the host repo's own remotes. */
  repos: z.array(z.string().regex(/^https:\/\/[^\s@/]+\/[^\s@]+$/)).default([]),
  /** Branches and tags (names, `*` within a segment) it may push to beside those under its prefix. */
  pushTo: z.array(z.string().regex(REF_PATTERN)).default([]),
  /** Where its own branches go on the remote; null: `sbx/<name>/`. */
  prefix: z.string().regex(PREFIX).nullable().default(null),
});
export type BridgeSettings = z.infer<typeof BridgeSettingsSchema>;

export const NO_BRIDGE_SETTINGS: BridgeSettings = { allow: [], protect: [], repos: [], pushTo: [], prefix: null };

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

/** Whether a name matches a pattern whose `*` stands for any part of one path segment. */
export function globMatch(pattern: string, name: string): boolean {
  return new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}$`).test(name);
}

/** Whether `branch` is protected: the remote's default branch, main, master, or a `protect` pattern. */
export function isProtectedBranch(branch: string, defaultBranch: string | undefined, settings: BridgeSettings): boolean {
  if (branch === defaultBranch || branch === "main" || branch === "master") return true;
  return settings.protect.some((p) => globMatch(p, branch));
}

/** Where a sandbox's own branches go on the remote: `sbx/<name>/` unless set. */
export function branchPrefix(settings: BridgeSettings, sandboxName: string): string {
  return settings.prefix ?? `sbx/${sandboxName}/`;
}

/** Whether a push may update or create this branch or tag (its short name) without asking first. */
export function mayPushTo(short: string, settings: BridgeSettings, sandboxName: string): boolean {
  if (settings.allow.includes("push-anywhere")) return true;
  if (short.startsWith(branchPrefix(settings, sandboxName))) return true;
  return settings.pushTo.some((p) => globMatch(p, short));
}

/**
 * What a bridge approval is for (the approvals row's `host`): a push to a branch or tag outside the prefix, or the token
 * for another repository. Approving it adds that one name or URL to the sandbox's settings.
 */
export type BridgeSubject = { kind: "push"; ref: string } | { kind: "repo"; url: string };

export function subjectText(s: BridgeSubject): string {
  return s.kind === "push" ? `push ${s.ref}` : `repo ${s.url}`;
}

export function parseSubject(text: string): BridgeSubject | null {
  const sp = text.indexOf(" ");
  const [kind, rest] = [text.slice(0, sp), text.slice(sp + 1)];
  if (kind === "push" && REF_PATTERN.test(rest) && !rest.includes("*")) return { kind: "push", ref: rest };
  if (kind === "repo" && /^https:\/\/[^\s@/]+\/[^\s@]+$/.test(rest)) return { kind: "repo", url: rest };
  return null;
}

/** A person's words for a bridge approval's subject. */
export function describeSubject(text: string): string {
  const s = parseSubject(text);
  if (s === null) return text;
  return s.kind === "push" ? `push to ${s.ref} (outside its branch prefix)` : `use your token for ${s.url}`;
}

/** The settings once an approval of `subject` is given (the same settings when it asks for nothing new). */
export function withApproval(settings: BridgeSettings, subject: BridgeSubject): BridgeSettings {
  if (subject.kind === "push") return settings.pushTo.includes(subject.ref) ? settings : { ...settings, pushTo: [...settings.pushTo, subject.ref].sort() };
  return settings.repos.includes(subject.url) ? settings : { ...settings, repos: [...settings.repos, subject.url].sort() };
}
