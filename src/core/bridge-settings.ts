// What a sandbox's bridge may do beyond the default: the per-sandbox switches `sbx bridge NAME --allow …` sets. Pure.
import { z } from "zod";

/** The switches, all off by default. */
export const BRIDGE_ALLOWS = ["push-anywhere", "force-push", "delete", "ci-files", "gh-api", "gh-gist", "gh-write"] as const;
export type BridgeAllow = (typeof BRIDGE_ALLOWS)[number];

/** What each switch lets the sandbox do (for help and refusals). */
export const ALLOW_MEANS: Record<BridgeAllow, string> = {
  "push-anywhere": "push to any branch or tag, not only under its prefix (sbx/<name>/) or one allowed with --allow-push",
  "force-push": "force-push (or lease) to, or delete, a protected branch: the default branch, main, master, or one named with --protect",
  delete: "delete a branch or tag on the remote that this sandbox did not create",
  "ci-files": "push commits that change CI or automation files (.github/workflows, .gitea and .forgejo workflows, .gitlab-ci.yml, bitbucket-pipelines.yml, Jenkinsfile, CODEOWNERS, …)",
  "gh-api": "run `gh api` (GET of this repository's paths only)",
  "gh-gist": "run `gh gist` (publishes files)",
  "gh-write": "change any pull request, issue or gist with gh (close, edit, comment, …), not only those this sandbox opened",
};

/** A branch or tag name pattern: git's safe characters, `*` for any part of one segment, no `..`. */
export const REF_PATTERN = /^(?!.*\.\.)[A-Za-z0-9._\/*-]{1,200}$/;
/**
 * What a gh change acts on, as a key: `<host>/<owner>/<repo>#<number>` (a pull request or issue: they share numbers),
 * `<host>/<owner>/<repo>:<branch>` (the pull request of a branch), `<host>/gist/<id>`.
 */
export const GH_TARGET = /^[a-z0-9.-]+(?::\d{1,5})?\/(?:[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}(?:#\d{1,9}|:(?!.*\.\.)[A-Za-z0-9._\/-]{1,255})|gist\/[0-9a-f]{1,64})$/;

/** What a gh change names: a number (`8`, `#8`), a pull request's branch, or a gist id. */
export type GhTarget = { kind: "number"; id: string } | { kind: "head"; id: string } | { kind: "gist"; id: string };

/** The key of a gh change's target on a forge repository (`host`, `owner/name`). Pure. */
export function ghTargetKey(host: string, repo: string, t: GhTarget): string {
  if (t.kind === "gist") return `${host}/gist/${t.id}`;
  return t.kind === "number" ? `${host}/${repo}#${t.id}` : `${host}/${repo}:${t.id}`;
}

/** A git remote's name, as the bridge takes one. */
export const REMOTE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

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
  /** Pull requests, issues and gists of others it may change with gh (`ghTargetKey`), each approved by the person. */
  ghTargets: z.array(z.string().regex(GH_TARGET)).default([]),
  /**
   * The host repo's remote every push of this sandbox goes to (a fork), whichever remote it names; null: the one named.
   * Its branches then never run the upstream's `on: push` workflows with the upstream's secrets.
   */
  pushRemote: z.string().regex(REMOTE_NAME).nullable().default(null),
});
export type BridgeSettings = z.infer<typeof BridgeSettingsSchema>;

export const NO_BRIDGE_SETTINGS: BridgeSettings = { allow: [], protect: [], repos: [], pushTo: [], prefix: null, ghTargets: [], pushRemote: null };

/** A stored identity's settings (a sandbox made before them has none: the defaults). */
export function bridgeSettingsOf(identity: Record<string, unknown>): BridgeSettings {
  const p = BridgeSettingsSchema.safeParse(identity.bridge ?? {});
  return p.success ? p.data : NO_BRIDGE_SETTINGS;
}

/**
 * What a push must not change by default: what runs with the repository's own credentials on a forge or CI service,
 * and who must approve changes. Directories count at the repository's root, where the services read them; file names
 * count in any directory (a Jenkinsfile, a GitLab child pipeline, a composite action, a CODEOWNERS are read wherever a
 * job or a setting names them). Lower case: paths are compared folded (see `foldedPath`).
 */
export const CI_DIRS: readonly string[] = [
  ".github/workflows/", // GitHub Actions
  ".github/actions/", // GitHub Actions: local actions by convention
  ".gitea/workflows/", // Gitea Actions
  ".gitea/actions/",
  ".forgejo/workflows/", // Forgejo Actions
  ".forgejo/actions/",
  ".gitlab/ci/", // GitLab CI includes by convention
  ".gitlab/agents/", // GitLab agent for Kubernetes
  ".circleci/", // CircleCI
  ".buildkite/", // Buildkite
  ".woodpecker/", // Woodpecker
  ".azure-pipelines/", // Azure Pipelines
  ".pipelines/",
  ".semaphore/", // Semaphore
  ".builds/", // SourceHut
  ".tekton/", // Tekton / Pipelines as Code
  ".teamcity/", // TeamCity Kotlin DSL
  ".harness/", // Harness
  ".zuul.d/", // Zuul
  "zuul.d/",
  ".devcontainer/", // Codespaces prebuilds run it on push
];

export const CI_FILE_NAMES: readonly string[] = [
  ".gitlab-ci.yml", // GitLab CI
  ".gitlab-ci.yaml",
  "bitbucket-pipelines.yml", // Bitbucket Pipelines
  ".drone.yml", // Drone
  ".drone.yaml",
  ".drone.jsonnet",
  ".drone.star",
  ".woodpecker.yml", // Woodpecker
  ".woodpecker.yaml",
  ".travis.yml", // Travis CI
  "appveyor.yml", // AppVeyor
  ".appveyor.yml",
  "appveyor.yaml",
  ".appveyor.yaml",
  ".cirrus.yml", // Cirrus CI
  ".cirrus.yaml",
  ".cirrus.star",
  ".vsts-ci.yml", // Azure Pipelines (its older name)
  "buildkite.yml", // Buildkite
  "buildkite.yaml",
  "buildkite.json",
  ".build.yml", // SourceHut
  "cloudbuild.yaml", // Google Cloud Build
  "cloudbuild.yml",
  "cloudbuild.json",
  "buildspec.yml", // AWS CodeBuild
  "buildspec.yaml",
  "bitrise.yml", // Bitrise
  "codemagic.yaml", // Codemagic
  ".zuul.yaml", // Zuul
  "zuul.yaml",
  ".onedev-buildspec.yml", // OneDev
  ".gocd.yaml", // GoCD
  ".gocd.yml",
  "codefresh.yml", // Codefresh
  "screwdriver.yaml", // Screwdriver
  ".pre-commit-config.yaml", // pre-commit.ci
  "action.yml", // GitHub/Gitea/Forgejo composite or JavaScript actions, wherever a workflow names one
  "action.yaml",
  "dependabot.yml", // Dependabot (with its own secrets)
  "dependabot.yaml",
  "renovate.json", // Renovate (with a token)
  "renovate.json5",
  ".renovaterc",
  ".renovaterc.json",
  ".renovaterc.json5",
  ".devcontainer.json", // Codespaces prebuilds
  "netlify.toml", // Netlify builds every pushed branch, with the site's environment
  "vercel.json", // Vercel, the same
  "codeowners", // who must approve (GitHub, GitLab, Gitea, Forgejo, Bitbucket read it in several places)
];

/** File names by pattern, in any directory. */
const CI_NAME_PATTERNS: readonly RegExp[] = [
  /^jenkinsfile(?:\..*)?$/, // Jenkins (Jenkinsfile, Jenkinsfile.release)
  /\.jenkinsfile$/,
  /^azure-pipelines.*\.ya?ml$/, // Azure Pipelines
  /\.gocd\.ya?ml$/, // GoCD
];

/** Code points HFS+ ignores in a name (git's own `.git` check skips them too): `.git\u200chub` is `.github` there. */
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/**
 * A repo path as a case-folding filesystem would take it: lower case, without the code points HFS+ ignores, each
 * segment without the trailing dots and spaces Windows drops. Pure.
 */
export function foldedPath(path: string): string {
  return path
    .normalize("NFC")
    .replace(HFS_IGNORED, "")
    .toLowerCase()
    .split("/")
    .map((seg) => seg.replace(/[. ]+$/, "") || seg)
    .join("/");
}

/** Whether a repo path is a CI or automation file (a dir entry covers what is under it), in any spelling. Pure. */
export function isCiPath(path: string): boolean {
  const p = foldedPath(path);
  // A path that is a CI dir or one of its parents (`.github` itself) can change only as a symlink or a submodule in
  // that place, through which a forge may read what it points at.
  if (CI_DIRS.some((d) => p.startsWith(d) || d.startsWith(`${p}/`))) return true;
  const base = p.slice(p.lastIndexOf("/") + 1);
  return CI_FILE_NAMES.includes(base) || CI_NAME_PATTERNS.some((r) => r.test(base));
}

/** Whether a name matches a pattern whose `*` stands for any part of one path segment. */
export function globMatch(pattern: string, name: string): boolean {
  return new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}$`).test(name);
}

/**
 * Whether `branch` is protected: the remote's default branch, main, master, or a `protect` pattern, in any letter case (a
 * server on a case-folding filesystem keeps `refs/heads/Main` and `refs/heads/main` as one file).
 */
export function isProtectedBranch(branch: string, defaultBranch: string | undefined, settings: BridgeSettings): boolean {
  const b = branch.toLowerCase();
  if (b === defaultBranch?.toLowerCase() || b === "main" || b === "master") return true;
  return settings.protect.some((p) => globMatch(p.toLowerCase(), b));
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
export type BridgeSubject = { kind: "push"; ref: string } | { kind: "repo"; url: string } | { kind: "gh"; target: string };

export function subjectText(s: BridgeSubject): string {
  return s.kind === "push" ? `push ${s.ref}` : s.kind === "repo" ? `repo ${s.url}` : `gh ${s.target}`;
}

export function parseSubject(text: string): BridgeSubject | null {
  const sp = text.indexOf(" ");
  const [kind, rest] = [text.slice(0, sp), text.slice(sp + 1)];
  if (kind === "push" && REF_PATTERN.test(rest) && !rest.includes("*")) return { kind: "push", ref: rest };
  if (kind === "repo" && /^https:\/\/[^\s@/]+\/[^\s@]+$/.test(rest)) return { kind: "repo", url: rest };
  if (kind === "gh" && GH_TARGET.test(rest)) return { kind: "gh", target: rest };
  return null;
}

/** A person's words for a bridge approval's subject. */
export function describeSubject(text: string): string {
  const s = parseSubject(text);
  if (s === null) return text;
  if (s.kind === "gh") return `change ${s.target} with gh (not opened by this sandbox)`;
  return s.kind === "push" ? `push to ${s.ref} (outside its branch prefix)` : `use your token for ${s.url}`;
}

/** The settings once an approval of `subject` is given (the same settings when it asks for nothing new). */
export function withApproval(settings: BridgeSettings, subject: BridgeSubject): BridgeSettings {
  if (subject.kind === "push") return settings.pushTo.includes(subject.ref) ? settings : { ...settings, pushTo: [...settings.pushTo, subject.ref].sort() };
  if (subject.kind === "gh") return settings.ghTargets.includes(subject.target) ? settings : { ...settings, ghTargets: [...settings.ghTargets, subject.target].sort() };
  return settings.repos.includes(subject.url) ? settings : { ...settings, repos: [...settings.repos, subject.url].sort() };
}
