// sbx doctor, per host repo with sandboxes: its list of sandbox stores, remotes an older sbx added, which token the
// bridge will use for each of its remotes, and which CI workflows a sandbox's pushed branch starts.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { credentialHost, suggestedTokenName, tokenNames } from "../bridge/tokens";
import { isSshUrl, toHttpsUrl } from "../bridge/git-policy";
import type { Exec } from "../sys/exec";
import { HOST_GIT_SAFE } from "../sync/git-argv";
import type { Check } from "./check";
import { pushWorkflowNote, SBX_BRANCHES_IGNORE } from "../core/push-workflows";
import { pushWorkflows } from "../workspace/push-workflows";

const STORE_LINE = /^\.\.\/sbx\/(_retired|[a-z0-9][a-z0-9-]*)\.git\/objects$/;

/**
 * The repo's `objects/info/alternates` names only stores that exist: a line left for a store that is gone (its state
 * deleted by hand, a crash) makes every git in the repo complain, and `sandbox-<name>/*` may not resolve.
 */
export function checkStores(repo: string): Check {
  const file = join(repo, ".git", "objects", "info", "alternates");
  let lines: string[] = [];
  try {
    lines = readFileSync(file, "utf8").split("\n").filter((l) => l !== "");
  } catch {
    return { name: "sandbox stores", status: "ok", detail: `${repo}: none listed` };
  }
  const names = lines.flatMap((l) => STORE_LINE.exec(l)?.[1] ?? []);
  const gone = names.filter((n) => !existsSync(join(repo, ".git", "sbx", `${n}.git`, "objects")));
  if (gone.length > 0) {
    return {
      name: "sandbox stores",
      status: "fail",
      detail: `${repo}: ${file} lists sandbox stores that are gone (${gone.join(", ")}): git there reports them, and commits only they held are missing`,
      fix: `remove the lines ${gone.map((n) => `../sbx/${n}.git/objects`).join(", ")} from ${file}; \`git fsck\` then says what is missing`,
    };
  }
  return { name: "sandbox stores", status: "ok", detail: `${repo}: ${names.length} store(s), all present` };
}

/**
 * Remotes named `sandbox-*` (an older sbx added one per sandbox, pointing into its clone): the user's own `git fetch
 * --all` would run git in a sandbox-writable clone. Their refs are safe to keep; the remote's config is not.
 * runs: git -C <repo> config --get-regexp ^remote\.sandbox-.*\.url$
 */
export async function checkSandboxRemotes(exec: Exec, repo: string): Promise<Check> {
  const r = await exec.run(["git", ...HOST_GIT_SAFE, "-C", repo, "config", "--get-regexp", "^remote\\.sandbox-.*\\.url$"], { check: false, env: { GIT_OPTIONAL_LOCKS: "0" } });
  const names = r.stdout.split("\n").flatMap((l) => /^remote\.(sandbox-[^.]+)\.url /.exec(l)?.[1] ?? []);
  if (names.length === 0) return { name: "sandbox remotes", status: "ok", detail: `${repo}: no remote leads into a sandbox` };
  return {
    name: "sandbox remotes",
    status: "warn",
    detail: `${repo}: remote(s) ${names.join(", ")} point into sandbox clones (an older sbx added them); \`git fetch --all\` there would run git in what a sandbox wrote`,
    fix: names.map((n) => `git -C ${repo} config --remove-section remote.${n}`).join("; ") + "   (their refs stay)",
  };
}

/** Pure: for one remote URL, the token the bridge will send and where it comes from, or why none. */
export function tokenReport(url: string, env: Readonly<Record<string, string>>, secrets: Readonly<Record<string, string>>): { status: "ok" | "warn"; text: string } {
  const https = toHttpsUrl(url) ?? (/^https?:\/\//.test(url) ? url : undefined);
  // An ssh remote goes over https with a token where there is one for its forge, else with the host's ssh and agent.
  const viaSsh = (why: string) =>
    env.SSH_AUTH_SOCK
      ? { status: "ok" as const, text: `${url}: ${why}: the bridge pushes over ssh with the host's agent (SSH_AUTH_SOCK; the daemon's environment must have it too) or ~/.ssh keys without a passphrase` }
      : { status: "warn" as const, text: `${url}: ${why}: the bridge pushes over ssh, but no SSH_AUTH_SOCK is set: only ~/.ssh keys without a passphrase work (ssh never prompts)` };
  if (!https) return isSshUrl(url) ? viaSsh("ssh, no https form") : { status: "warn", text: `${url}: neither https nor ssh: pushes through the bridge fail` };
  // The daemon reads GH_TOKEN/GITHUB_TOKEN from its environment, everything from the sbx secrets file (which wins). A
  // remote of the repo is one of its own hosts, where GIT_TOKEN goes too (the bridge's choice, credential-scope).
  for (const n of tokenNames(https, new Set([credentialHost(https)]))) {
    if (secrets[n]) return { status: "ok", text: `${url}: ${n} from the sbx secrets file` };
    if ((n === "GH_TOKEN" || n === "GITHUB_TOKEN") && env[n]) return { status: "ok", text: `${url}: ${n} from the environment (the daemon's must have it too: it reads its own)` };
  }
  if (isSshUrl(url)) return viaSsh(`no token (\`sbx secret set ${suggestedTokenName(https)}\` for https)`);
  return { status: "warn", text: `${url}: no token: pushes and gh fail with "authentication"; \`sbx secret set ${suggestedTokenName(https)}\`` };
}

/**
 * Which token the bridge uses for each remote of the repo (names and where each comes from; never a value).
 * runs: git -C <repo> config --get-regexp ^remote\..*\.url$
 */
export async function checkTokens(exec: Exec, repo: string, env: Readonly<Record<string, string>>, secrets: Readonly<Record<string, string>>): Promise<Check> {
  const r = await exec.run(["git", ...HOST_GIT_SAFE, "-C", repo, "config", "--get-regexp", "^remote\\..*\\.url$"], { check: false, env: { GIT_OPTIONAL_LOCKS: "0" } });
  const remotes = r.stdout.split("\n").flatMap((l) => {
    const m = /^remote\.(.+)\.url (.+)$/.exec(l);
    return m && !m[1]!.startsWith("sandbox-") ? [[m[1]!, m[2]!] as const] : [];
  });
  if (remotes.length === 0) return { name: "tokens", status: "ok", detail: `${repo}: no remotes: nothing to push to` };
  const rows = remotes.map(([n, u]) => ({ n, ...tokenReport(u, env, secrets) }));
  const warn = rows.some((x) => x.status === "warn");
  return {
    name: "tokens",
    status: warn ? "warn" : "ok",
    detail: `${repo}: ${rows.map((x) => `${x.n} ${x.text}`).join("; ")}`,
    ...(warn ? { fix: "set the token named for each remote above (sbx secret set NAME reads it from stdin)" } : {}),
  };
}

/**
 * A branch a sandbox pushes runs the repository's `on: push` workflows (and other CI services' pipelines) with the
 * repository's secrets, on the sandbox's code: a warning naming each, read from what the forge runs (the remote's
 * default branch as the repo knows it, else HEAD), with the two ways out.
 * runs: git -C <repo> rev-parse --verify -q refs/remotes/origin/HEAD^{commit} (else HEAD); (pushWorkflows) ls-tree, cat-file
 */
export async function checkPushWorkflows(exec: Exec, repo: string): Promise<Check> {
  const git = (args: string[]) => exec.run(["git", ...HOST_GIT_SAFE, "-C", repo, ...args], { check: false, env: { GIT_OPTIONAL_LOCKS: "0" } });
  let rev = "";
  for (const r of ["refs/remotes/origin/HEAD^{commit}", "HEAD^{commit}"]) {
    const v = await git(["rev-parse", "--verify", "-q", r]);
    if (v.exitCode === 0 && /^[0-9a-f]{40,64}$/.test(v.stdout.trim())) {
      rev = v.stdout.trim();
      break;
    }
  }
  if (!rev) return { name: "CI on sandbox pushes", status: "ok", detail: `${repo}: nothing committed yet` };
  const w = await pushWorkflows(git, rev, [{ kind: "branch", name: "sbx/sandbox/work" }], true).catch((e: Error) => ({ hits: [{ path: "(CI files)", why: `not readable (${e.message.slice(0, 80)})` }], other: [] }));
  if (w.hits.length === 0 && w.other.length === 0) return { name: "CI on sandbox pushes", status: "ok", detail: `${repo}: no workflow runs for a branch under sbx/` };
  const [head, ...rest] = pushWorkflowNote(w.hits, w.other);
  const ways = rest.filter((l) => !l.startsWith("  "));
  return {
    name: "CI on sandbox pushes",
    status: "warn",
    detail: `${repo}: ${head} ${rest.filter((l) => l.startsWith("  ")).map((l) => l.trim()).join("; ")}`,
    fix: ways.length ? ways.join("; ") : `add \`${SBX_BRANCHES_IGNORE}\` under \`on: push:\``,
  };
}
