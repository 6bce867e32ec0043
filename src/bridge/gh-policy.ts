// gh through the bridge: the decision on one gh invocation (decideGh), with `gh api` and `gh gist` once the user
// switched them on, and the repository or target a gh command names. Pure.
import type { GhTarget } from "../core/bridge-settings";
import { canonicalPath } from "../core/credential-scope";
import { isSafeRefName } from "./git-policy";
import { deny, GH_COMMANDS, GH_GIST, GH_OPT_IN, LAST_COMMENT, parseOptions, refusal, type Decision, type OptTable, type PolicyContext } from "./policy";

export interface GhPlan {
  tool: "gh";
  /** `version` and `auth` (status only) are answered without the token; the rest run against the host repo. */
  group: string;
  sub: string;
  /** Arguments to pass to gh (with --body-file values replaced by "-" and --repo removed). */
  args: string[];
  /** Host path of the file to feed on stdin as the body, after the path check. */
  bodyFile?: string;
  /** Another repository (its https URL, one the user added for this sandbox) gh acts on instead of the host repo's. */
  repo?: string;
  /** What it does to the forge (see GhSub in policy.ts): none for a read. */
  acts?: "creates" | "changes";
  /** For `changes`: the pull request, issue or gist it names. */
  target?: GhTarget;
  /**
   * It edits or deletes the last comment of the token's owner (the person) there (LAST_COMMENT): what the sandbox opened
   * does not make that comment its own, so it asks unless the person approved this target.
   */
  othersText?: true;
}

/** Whether gh's `[HOST/]OWNER/REPO` names the repository at `url` (no host: any, gh's default host is the forge's). Pure. */
export function ghRepoMatches(url: string, arg: string): boolean {
  const m = /^https:\/\/([^/]+)\/([^/]+)\/([^/]+?)(?:\.git)?\/?$/.exec(url);
  if (!m) return false;
  const parts = arg.split("/");
  if (parts.length === 2) return `${m[2]}/${m[3]}`.toLowerCase() === arg.toLowerCase();
  return parts.length === 3 && `${m[1]}/${m[2]}/${m[3]}`.toLowerCase() === arg.toLowerCase();
}

/**
 * The https URL of a repository gh names as OWNER/REPO (on the host repo's forge: its first remote's host) or
 * HOST/OWNER/REPO; undefined for anything else.
 */
export function repoUrlOf(arg: string, remotes: Record<string, string>): string | undefined {
  const parts = arg.split("/");
  if (!parts.every((p) => /^[A-Za-z0-9_.-]{1,100}$/.test(p) && p !== "." && p !== "..")) return undefined;
  if (parts.length === 3) return `https://${parts[0]!.toLowerCase()}/${parts[1]}/${parts[2]}`;
  if (parts.length !== 2) return undefined;
  // The forge host of the first remote that has one (https, or ssh in either form, any host: as gh itself is pointed).
  const host = [remotes.origin, ...Object.values(remotes)]
    .map((u) => (u === undefined ? undefined : (/^https?:\/\/(?:[^@/]*@)?([A-Za-z0-9.-]+(?::\d+)?)\//i.exec(u) ?? /^(?:ssh:\/\/)?[A-Za-z0-9._-]+@([A-Za-z0-9.-]+)[:/]/.exec(u))?.[1]))
    .find((h) => h !== undefined);
  return host === undefined ? undefined : `https://${host.toLowerCase()}/${arg}`;
}

const API_TABLE: OptTable = {
  long: { "--jq": "value", "--template": "value", "--paginate": "none", "--silent": "none", "--include": "none", "--method": "value", "--cache": "value" },
  short: { q: "--jq", t: "--template", i: "--include", X: "--method" },
};

/**
 * `gh api`, once allowed: GET only (no fields, no input, no headers, no other host), of one path. The path's repository
 * is checked where it is known (the bridge: `repos/{owner}/{repo}/…` or the host repo's own owner/name).
 */
function decideGhApi(args: readonly string[]): Decision<GhPlan> {
  const parsed = parseOptions(args, API_TABLE, "gh api", (n) => (n === "--template" ? undefined : refusal(n)));
  if (!parsed.ok) return deny(`${parsed.reason} (gh api takes a GET of one path of this repository, with --jq/--template/--paginate)`);
  const out: string[] = ["api"];
  for (const [name, v] of parsed.plan.options) {
    if (name === "--method" && (v ?? "").toUpperCase() !== "GET") return deny("gh api: only GET requests go through the bridge");
    if (name === "--method") continue;
    out.push(v === undefined ? name : `${name}=${v}`);
  }
  if (parsed.plan.positionals.length !== 1) return deny("gh api: name exactly one path (e.g. repos/{owner}/{repo}/pulls)");
  const path = parsed.plan.positionals[0]!;
  if (!/^\/?repos\/[A-Za-z0-9_.{}-]+\/[A-Za-z0-9_.{}-]+(?:[/?][A-Za-z0-9_.,=&%\/?{}:-]*)?$/.test(path) || path.includes("..")) {
    return deny(`gh api ${path}: only this repository's paths (repos/{owner}/{repo}/…) are allowed`);
  }
  // Judged on the one path GitHub acts on (credential-scope): gh's placeholders stand for plain names.
  const c = canonicalPath(`/${path.replace(/^\//, "").replace(/\{[a-z]+\}/g, "x")}`);
  if (!c.ok) return deny(`gh api ${path}: ${c.reason}`);
  out.push("--method", "GET", "--", path);
  return { ok: true, plan: { tool: "gh", group: "api", sub: "", args: out } };
}

/** Decides on a gh invocation. `args` is everything after `gh`. */
export function decideGh(argsIn: readonly string[], cwdView: string, ctx: PolicyContext): Decision<GhPlan> {
  let args = argsIn;
  const cwdCheck = ctx.checkPath(cwdView, "/");
  if (!cwdCheck.ok) return deny(`working directory: ${cwdCheck.reason}`);
  const [group, sub] = args;
  if (group === undefined) return deny("no gh command given");
  // Asked by people and agents before anything else: answered with no token anywhere near.
  if ((group === "--version" || group === "version") && args.length === 1) return { ok: true, plan: { tool: "gh", group: "version", sub: "", args: ["--version"] } };
  if (group === "auth") {
    if (sub !== "status") return deny(`gh auth ${sub ?? ""} is not run through the bridge: the login is the host's, and stays there`.replace("  ", " "));
    const extra = args.slice(2).filter((a, i, all) => !(a === "-h" || a === "--hostname" || a.startsWith("--hostname=") || all[i - 1] === "-h" || all[i - 1] === "--hostname"));
    if (extra.length > 0) return deny(`gh auth status ${extra.join(" ")}: only --hostname is taken (the token is never shown)`);
    return { ok: true, plan: { tool: "gh", group: "auth", sub: "status", args: [] } };
  }
  if (group.startsWith("-")) return deny(refusal(group.split("=")[0]!) ?? `gh option ${group} is not allowed before the command`);
  if (group in GH_OPT_IN) {
    const key = GH_OPT_IN[group as keyof typeof GH_OPT_IN];
    if (!ctx.options[key]) return deny(`gh ${group} is disabled; to allow it for this sandbox: sbx bridge NAME --allow ${group === "api" ? "gh-api" : "gh-gist"}`);
    if (group === "api") return decideGhApi(args.slice(1));
    return decideGhGist(args.slice(1), cwdView, ctx);
  }
  const subs = GH_COMMANDS[group];
  if (!subs) return deny(`gh ${group} is not something the bridge runs; allowed: ${Object.keys(GH_COMMANDS).join(", ")}`);
  if (sub === undefined || !Object.hasOwn(subs, sub)) return deny(`gh ${group} ${sub ?? ""} is not allowed; allowed: ${Object.keys(subs).join(", ")}`.replace("  ", " "));
  const spec = subs[sub]!;
  const table: OptTable = { long: spec.long, short: spec.short };
  // gh's --repo/-R is set by the bridge from the host repo's remote; a sandbox may name another only when the user added
  // it for this sandbox (`sbx bridge NAME --allow-repo URL`).
  const rest = [...args.slice(2)];
  let chosen: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === "--") break;
    let v: string | undefined;
    if (a === "-R" || a === "--repo") v = rest[i + 1];
    else if (a.startsWith("--repo=")) v = a.slice("--repo=".length);
    else if (/^-R./.test(a)) v = a.slice(2);
    else continue;
    const url = v === undefined ? undefined : (ctx.extraRepos ?? []).find((u) => ghRepoMatches(u, v!));
    if (!url) {
      if (v === undefined) return deny("gh acts on this sandbox's repository only; --repo needs a value");
      const wanted = repoUrlOf(v, ctx.remotes);
      return {
        ok: false,
        reason: `gh acts on this sandbox's repository only; to let it act on ${v}: sbx bridge NAME --allow-repo ${wanted ?? `https://<host>/${v.split("/").slice(-2).join("/")}`}`,
        ...(wanted ? { ask: { kind: "repo" as const, url: wanted } } : {}),
      };
    }
    chosen = url;
    rest.splice(i, a === "-R" || a === "--repo" ? 2 : 1);
    i--;
  }
  args = [group, sub, ...rest];
  // gh's --template is a Go template over gh's own output, not git's hook copier: it runs where no token is (the token
  // is in a private config dir, not gh's environment), so it is taken like --jq.
  const parsed = parseOptions(args.slice(2), table, `gh ${group} ${sub}`, (n) => (n === "--template" ? undefined : refusal(n)));
  if (!parsed.ok) return parsed;
  const out: string[] = [group, sub];
  let bodyFile: string | undefined;
  for (const [name, v] of parsed.plan.options) {
    if (spec.long[name] === "path") {
      if (bodyFile !== undefined) return deny(`${name} given twice`);
      if (v === "-") return deny(`${name} - (stdin) is not supported through the bridge; pass a file in the workspace`);
      const p = ctx.checkPath(v!, cwdView);
      if (!p.ok) return deny(`${name} ${v}: ${p.reason}`);
      bodyFile = p.hostPath;
      out.push(name, "-");
    } else if (v === undefined) out.push(name);
    else out.push(`${name}=${v}`);
  }
  // `gh repo view` takes the repo as its argument: the bridge names the host's own, and no other.
  if (group === "repo" && parsed.plan.positionals.length > 0) return deny(`gh repo ${sub} shows this sandbox's repository only; do not name one (${parsed.plan.positionals[0]})`);
  for (const pos of parsed.plan.positionals) {
    if (!/^[A-Za-z0-9#._\/:-]+$/.test(pos)) return deny(`argument ${JSON.stringify(pos)} is not allowed (a number, branch or URL is)`);
    if (/^https?:/.test(pos) || pos.includes("://")) return deny("pass a number or branch, not a URL");
  }
  out.push(...(parsed.plan.positionals.length ? ["--", ...parsed.plan.positionals] : []));
  let target: GhTarget | undefined;
  if (spec.acts === "changes") {
    const t = ghTargetOf(group, parsed.plan.positionals[0]);
    if (!t.ok) return t;
    target = t.plan;
  }
  return {
    ok: true,
    plan: {
      tool: "gh",
      group,
      sub,
      args: out,
      ...(bodyFile !== undefined ? { bodyFile } : {}),
      ...(chosen ? { repo: chosen } : {}),
      ...(spec.acts ? { acts: spec.acts } : {}),
      ...(target ? { target } : {}),
      ...(sub === "comment" && parsed.plan.options.some(([n]) => (LAST_COMMENT as readonly string[]).includes(n)) ? { othersText: true as const } : {}),
    },
  };
}

/** The pull request or issue a change names: a number (`8`, `#8`) or, for a pull request, its branch. Pure. */
function ghTargetOf(group: string, arg: string | undefined): Decision<GhTarget> {
  if (arg === undefined) return deny(`gh ${group}: name the pull request or issue by number (gh ${group} <verb> 12); without one gh picks the current branch's, which it cannot see on the host`);
  const n = /^#?([1-9]\d{0,8})$/.exec(arg);
  if (n) return { ok: true, plan: { kind: "number", id: n[1]! } };
  if (group === "pr" && isSafeRefName(arg)) return { ok: true, plan: { kind: "head", id: arg } };
  return deny(`gh ${group}: ${JSON.stringify(arg)} is not a ${group === "pr" ? "pull request number or branch" : "issue number"}`);
}

/**
 * `gh gist`, once allowed (GH_GIST). `create` takes exactly one file of the workspace, which the bridge reads (the plan's
 * bodyFile) and gh gets on stdin with its name; `edit` and `delete` name a gist id.
 */
function decideGhGist(args: readonly string[], cwdView: string, ctx: PolicyContext): Decision<GhPlan> {
  const [sub] = args;
  if (sub === undefined || !Object.hasOwn(GH_GIST, sub)) return deny(`gh gist ${sub ?? ""}: allowed: ${Object.keys(GH_GIST).join(", ")}`.replace("  ", " "));
  const spec = GH_GIST[sub]!;
  const parsed = parseOptions(args.slice(1), { long: spec.long, short: spec.short }, `gh gist ${sub}`);
  if (!parsed.ok) return parsed;
  const out: string[] = ["gist", sub];
  for (const [name, v] of parsed.plan.options) out.push(v === undefined ? name : `${name}=${v}`);
  const pos = parsed.plan.positionals;
  if (sub === "create") {
    if (pos.length !== 1) return deny("gh gist create: name exactly one file of the workspace");
    const p = ctx.checkPath(pos[0]!, cwdView);
    if (!p.ok) return deny(`gh gist create ${pos[0]}: ${p.reason}`);
    const name = pos[0]!.split("/").pop()!;
    if (!parsed.plan.options.some(([n]) => n === "--filename")) out.push(`--filename=${name}`);
    out.push("--", "-");
    return { ok: true, plan: { tool: "gh", group: "gist", sub, args: out, bodyFile: p.hostPath, acts: "creates" } };
  }
  if (sub === "list") {
    if (pos.length > 0) return deny("gh gist list takes no arguments");
    return { ok: true, plan: { tool: "gh", group: "gist", sub, args: out } };
  }
  const id = pos[0];
  if (id === undefined || !/^[0-9a-f]{1,64}$/.test(id) || pos.length > (sub === "view" ? 2 : 1)) return deny(`gh gist ${sub}: name one gist by its id (hex)`);
  if (pos[1] !== undefined && !/^[A-Za-z0-9._-]{1,255}$/.test(pos[1])) return deny(`gh gist ${sub}: ${JSON.stringify(pos[1])} is not a file name`);
  out.push("--", ...pos);
  return { ok: true, plan: { tool: "gh", group: "gist", sub, args: out, ...(spec.acts ? { acts: spec.acts, target: { kind: "gist" as const, id } } : {}) } };
}
