// gh through the bridge: the host's gh run for the host repo's own forge repository, its token in a config dir made for
// the one call, and what a gh argument names of the sandbox's files read once, by descriptor.
import { closeSync, constants as fsConstants, fstatSync, mkdtempSync, openSync, readlinkSync, readSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { BRIDGE_MAX_BODY_FILE } from "../core/bounds";
import { join } from "node:path";
import { ghTargetKey } from "../core/bridge-settings";
import { remoteHosts } from "../core/credential-scope";
import { createdKeys, readCreated, recordCreated } from "./gh-created";
import { suggestedTokenName, tokenFor, withheldText } from "./tokens";
import { notAllowed, type Job, type Outcome } from "./job";
import { isSafeRefName } from "./git-policy";
import type { GhPlan } from "./gh-policy";
import type { PolicyContext } from "./policy";
import { tlsEnvNow } from "./gate-git";

/** A path's real path, or null when it cannot be resolved. */
export function realOrNull(p: string): string | null {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
}

/** owner/name of a GitHub URL, or undefined. */
export function githubRepo(url: string): string | undefined {
  const f = forgeRepo(url);
  return f?.host === "github.com" ? f.path : undefined;
}

/** The forge host and owner/name of an https or ssh remote URL (`https://h/o/r(.git)`, `git@h:o/r`), or undefined. Pure. */
export function forgeRepo(url: string): { host: string; path: string } | undefined {
  const m =
    /^https:\/\/(?:[^@\/]*@)?([A-Za-z0-9.-]+(?::\d+)?)\/([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(url) ??
    /^(?:ssh:\/\/)?git@([A-Za-z0-9.-]+)[:\/]([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(url);
  return m ? { host: m[1]!.toLowerCase(), path: `${m[2]}/${m[3]}` } : undefined;
}

/** Pure: a YAML single-quoted scalar. */
function yamlQuote(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

/**
 * Pure: gh's hosts.yml for one host and token. gh reads its token from here when no GH_TOKEN is set, so the token is
 * in no process's environment, where `--jq '$ENV'` (gojq) would print it.
 */
export function ghHostsYaml(host: string, token: string): string {
  return `${yamlQuote(host)}:\n    oauth_token: ${yamlQuote(token)}\n    git_protocol: https\n`;
}

/**
 * Reads a file the sandbox named exactly once, by descriptor: opened without following a final symlink and without
 * blocking on a FIFO, checked with fstat (a regular file, at most `max` bytes), and on Linux checked again by where the
 * open descriptor really is (a parent swapped for a symlink after the path check leads outside `root`).
 */
export function readNamedFile(path: string, root: string, max: number): { bytes: Uint8Array } | { error: string } {
  let fd: number;
  try {
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (e) {
    return { error: `${path}: cannot open it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); a symlink is not followed` };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { error: `${path}: not a regular file in the workspace` };
    if (st.size > max) return { error: `${path} is larger than ${max} bytes` };
    if (process.platform === "linux") {
      let real: string;
      try {
        real = readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return { error: `${path}: cannot tell where it is` };
      }
      const rootReal = realOrNull(root) ?? root;
      if (real !== rootReal && !real.startsWith(`${rootReal}/`)) return { error: `${path} resolves outside the sandbox's workspace` };
    }
    const buf = Buffer.alloc(st.size);
    let at = 0;
    while (at < st.size) {
      const n = readSync(fd, buf, at, st.size - at, at);
      if (n === 0) break;
      at += n;
    }
    return { bytes: new Uint8Array(buf.subarray(0, at)) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Runs gh on the host for the host repo's own forge repository: its token in a private GH_CONFIG_DIR made for this one
 * call (never in gh's environment, which `--jq`/`--template` can read), `--repo` (or `gh repo view`'s argument) from the
 * host repo's remote, in a host-owned directory. `gh --version` runs with no token at all; `gh auth status` is answered
 * by the bridge.
 * runs: gh <group> <sub> … --repo [host/]owner/name (stdin: the --body-file the bridge read)
 */
export async function runGh(job: Job, ctx: PolicyContext, plan: GhPlan): Promise<Outcome> {
  const { deps, gate: g, req, send, refuse, refuseOrAsk, settings } = job;
  const env = (configDir: string): Record<string, string> => ({
    ...tlsEnvNow(deps.tlsEnv),
    PATH: g.path,
    HOME: g.paths.home,
    GH_CONFIG_DIR: configDir,
    GH_PROMPT_DISABLED: "1",
    GH_NO_UPDATE_NOTIFIER: "1",
    NO_COLOR: "1",
    LC_ALL: "C.UTF-8",
  });
  const out = (r: { stdout: string; exitCode: number }): Outcome => {
    if (r.stdout) send({ t: "out", d: r.stdout });
    return { decision: "allowed", exitCode: r.exitCode };
  };
  if (plan.group === "version") {
    const empty = mkdtempSync(join(g.paths.home, "gh-"));
    try {
      return out(await deps.exec.run(["gh", "--version"], { cwd: g.paths.ghCwd, env: env(empty), replaceEnv: true, check: false, timeoutMs: 30_000 }));
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  }
  const url = plan.repo ?? ctx.remotes.origin ?? Object.values(ctx.remotes)[0];
  const forge = url ? forgeRepo(url) : undefined;
  if (!forge) return refuse("the host repository has no forge remote (https://host/owner/repo or git@host:owner/repo), so gh has nothing to act on");
  // A change to a pull request, issue or gist this sandbox did not open asks the person first, as a push outside its
  // prefix does: what it opened is recorded in its gate, what the person approved in its settings. Editing or deleting
  // the token owner's last comment asks even where the sandbox opened the thread: that comment is the person's.
  if (plan.acts === "changes" && plan.target && !settings.allow.includes("gh-write")) {
    const key = ghTargetKey(forge.host, forge.path, plan.target);
    if (!settings.ghTargets.includes(key) && (plan.othersText || !readCreated(g.paths.ghCreated).has(key))) {
      const what = plan.target.kind === "gist" ? `gist ${plan.target.id}` : plan.target.kind === "head" ? `the pull request of ${plan.target.id}` : `#${plan.target.id}`;
      const where = plan.target.kind === "gist" ? forge.host : forge.path;
      const why = plan.othersText
        ? `gh ${plan.group} ${plan.sub} ${plan.args.includes("--delete-last") ? "--delete-last deletes" : "--edit-last edits"} the last comment of the token's owner (yours) on ${what} of ${where}, which this sandbox did not write`
        : `gh ${plan.group} ${plan.sub} changes ${what} of ${where}, which this sandbox did not open (it changes what it opened without asking)`;
      return refuseOrAsk({ reason: notAllowed(why, "gh-write", deps.sandbox.name), ask: { kind: "gh", target: key } });
    }
  }
  const ownHosts = remoteHosts(Object.values(ctx.remotes));
  const choice = tokenFor(`https://${forge.host}/`, deps.secrets(), ownHosts);
  const token = choice.name !== null ? choice.value : undefined;
  const tokenName = suggestedTokenName(`https://${forge.host}/`);
  if (plan.group === "auth") {
    if (!token) {
      send({ t: "err", d: `${forge.host}\n  X not logged in: the host has no token for ${forge.host} (sbx secret set ${tokenName})\n` });
      return { decision: "allowed", exitCode: 1 };
    }
    send({ t: "out", d: `${forge.host}\n  ✓ Logged in to ${forge.host} through the sbx bridge: the token stays on the host, gh runs there for ${forge.path}\n` });
    return { decision: "allowed", exitCode: 0 };
  }
  if (!token) return refuse(choice.name === null && choice.withheld ? withheldText(choice.withheld, `https://${forge.host}/`, ownHosts) : `no token for ${forge.host} on the host: run \`sbx secret set ${tokenName}\` there`);
  let stdin: Uint8Array | undefined;
  if (plan.bodyFile !== undefined) {
    const body = readNamedFile(plan.bodyFile, deps.sandbox.workspace, BRIDGE_MAX_BODY_FILE);
    if ("error" in body) return refuse(body.error);
    stdin = body.bytes;
  }
  const repoArg = forge.host === "github.com" ? forge.path : `${forge.host}/${forge.path}`;
  if (plan.group === "api") {
    // The path names this repository: through gh's own placeholders, or its owner/name exactly.
    const path = plan.args.at(-1)!.replace(/^\//, "");
    const own = `repos/${forge.path}`;
    const ok = path.startsWith("repos/{owner}/{repo}") ? /^repos\/\{owner\}\/\{repo\}(?:[/?]|$)/.test(path) : path === own || path.startsWith(`${own}/`) || path.startsWith(`${own}?`);
    if (!ok) return refuse(`gh api ${path}: only ${own}/… (or repos/{owner}/{repo}/…) is allowed`);
  }
  const dash = plan.args.indexOf("--");
  const head = dash === -1 ? plan.args : plan.args.slice(0, dash);
  const tail = dash === -1 ? [] : plan.args.slice(dash);
  const extra: string[] = [];
  if (plan.group === "repo") tail.splice(0, tail.length, "--", repoArg);
  else if (plan.group !== "api" && plan.group !== "gist") extra.push("--repo", repoArg);
  if (plan.group === "pr" && plan.sub === "create" && !head.some((a) => a === "--head" || a.startsWith("--head="))) {
    if (!req.branch || !isSafeRefName(req.branch)) return refuse("gh pr create: not on a branch; pass --head <branch>");
    // Its pushes go to a fork (--push-remote): the pull request's head is the fork's branch.
    const fork = settings.pushRemote ? ctx.remotes[settings.pushRemote] : undefined;
    const forkRepo = fork ? forgeRepo(fork) : undefined;
    const owner = forkRepo && forkRepo.host === forge.host && forkRepo.path !== forge.path ? forkRepo.path.split("/")[0] : undefined;
    extra.push(`--head=${owner ? `${owner}:` : ""}${req.branch}`);
  }
  // A config dir of its own for this call, 0700 in the host-owned gate dir, gone when gh is.
  const configDir = mkdtempSync(join(g.paths.home, "gh-"));
  // The host's parent proxy for this one call, to the forge and names under it (api.<host>): its credentials never in
  // gh's environment, which a formatter the sandbox chose can read (sys/parent-relay.ts).
  const parent = g.parent ? await g.parent.lease(`https://${forge.host}/`) : null;
  try {
    writeFileSync(join(configDir, "hosts.yml"), ghHostsYaml(forge.host, token), { mode: 0o600 });
    const r = await deps.exec.run(["gh", ...head, ...extra, ...tail], {
      cwd: g.paths.ghCwd,
      env: { ...parent?.env, ...env(configDir), ...(forge.host === "github.com" ? {} : { GH_HOST: forge.host }), ...(plan.group === "api" ? { GH_REPO: repoArg } : {}) },
      replaceEnv: true,
      ...(stdin ? { stdin } : {}),
      onStderr: (s) => send({ t: "err", d: s }),
      check: false,
      timeoutMs: 10 * 60_000,
    });
    // What it opened, it may change later without asking (never from a dry run, whose preview is the sandbox's text).
    if (plan.acts === "creates" && r.exitCode === 0 && !plan.args.includes("--dry-run")) {
      recordCreated(g.paths.ghCreated, createdKeys(forge.host, forge.path, plan.group, r.stdout));
    }
    return out(r);
  } finally {
    parent?.release();
    rmSync(configDir, { recursive: true, force: true });
  }
}
