// git through the bridge: the decision on one git invocation (decideGit), the repository it names (checkRepository),
// push refspecs, and the URL forms the bridge reads. Pure.
import { REMOTE_NAME } from "../core/bridge-settings";
import { canonicalPath } from "../core/credential-scope";
import { deny, GIT_SUBCOMMANDS, GLOBAL, parseOptions, refusal, type Decision, type PolicyContext } from "./policy";

const REMOTE_HELPER = "remote helpers (<transport>::<address>, e.g. ext::) can run arbitrary commands and are refused";

export interface Refspec {
  force: boolean;
  /** Source as the sandbox named it ("" for a deletion). */
  src: string;
  /** Full destination ref: refs/heads/… or refs/tags/… ("" when git's default applies). */
  dst: string;
  /**
   * The sandbox named no destination, so `dst` is the branch of the same name; git pushes to the ref the
   * source resolves to, so a tag (`git push origin v1`) goes to refs/tags/v1 once the bridge knows it is one.
   */
  sameAsSource?: true;
}

export type GitOp = "push" | "fetch" | "pull" | "ls-remote" | "clone";

export interface GitPlan {
  tool: "git";
  op: GitOp;
  /** The remote's name when it is one of the host repo's remotes. */
  remote?: string;
  /** The URL the host will talk to (from host config, or a vetted URL the sandbox named). */
  url: string;
  /** It is one of the host repo's own remotes (named, or by its URL): the only destination the host's token goes to. */
  own: boolean;
  /** The remote's ssh URL, when its config has one: used (with the host's ssh and agent) where no token is at hand. */
  ssh?: string;
  /** A push sent to the push remote: the remote the sandbox named. */
  namedRemote?: string;
  /** Long option names the sandbox gave, with values (`--jobs=4` → ["--jobs","4"]). */
  options: Array<[string, string | undefined]>;
  /** Positional arguments after the remote. */
  rest: string[];
  refspecs: Refspec[];
  /** The sandbox's working directory, as a host path (checked). */
  cwd: string;
}

/** Is `s` a ref name git would accept (check-ref-format rules, tightened)? */
export function isSafeRefName(s: string): boolean {
  if (s === "" || s.length > 255) return false;
  if (!/^[A-Za-z0-9._\/-]+$/.test(s)) return false;
  if (s.startsWith("-") || s.startsWith("/") || s.endsWith("/") || s.endsWith(".")) return false;
  if (s.includes("..") || s.includes("//") || s.includes("@{")) return false;
  return s.split("/").every((c) => c !== "" && !c.startsWith(".") && !c.endsWith(".lock"));
}

/** A revision the sandbox may name as a push source: a ref name, a hex id, HEAD and ~/^ suffixes. */
function isSafeRevision(s: string): boolean {
  return /^[A-Za-z0-9._\/-]+(?:[~^][0-9]*)*$/.test(s) && !s.startsWith("-") && !s.includes("..");
}

/** Parses `[+]src[:dst]` for a push; dst defaults per git (same name) and is expanded to a full ref. */
export function parsePushRefspec(spec: string): Decision<Refspec> {
  let s = spec;
  let force = false;
  if (s.startsWith("+")) {
    force = true;
    s = s.slice(1);
  }
  const parts = s.split(":");
  if (parts.length > 2) return deny(`refspec ${JSON.stringify(spec)} has more than one ':'`);
  const src = parts[0]!;
  let dst = parts.length === 2 ? parts[1]! : "";
  if (src.includes("*") || dst.includes("*")) return deny("wildcard refspecs are refused; push refs by name");
  if (src !== "" && !isSafeRevision(src)) return deny(`refspec source ${JSON.stringify(src)} is not a plain revision`);
  if (parts.length === 2 && dst === "") return deny(`refspec ${JSON.stringify(spec)} has an empty destination`);
  let same = false;
  if (dst === "" && src !== "") {
    if (/^[0-9a-f]{7,64}$/.test(src) || /[~^]/.test(src) || src === "HEAD") return { ok: true, plan: { force, src, dst: "" } };
    dst = src;
    same = !src.startsWith("refs/");
  }
  if (!isSafeRefName(dst)) return deny(`refspec destination ${JSON.stringify(dst)} is not a valid ref name`);
  if (dst.startsWith("refs/")) {
    if (!dst.startsWith("refs/heads/") && !dst.startsWith("refs/tags/")) return deny(`only refs/heads/* and refs/tags/* may be pushed, not ${dst}`);
  } else dst = `refs/heads/${dst}`;
  return { ok: true, plan: { force, src, dst, ...(same ? { sameAsSource: true as const } : {}) } };
}

/** The origin (scheme://host[:port]) of an http(s) URL, or undefined. */
export function urlOrigin(url: string): string | undefined {
  const m = /^(https?):\/\/(?:[^@\/?#]*@)?([^\/?#]+)/i.exec(url);
  return m ? `${m[1]!.toLowerCase()}://${m[2]!.toLowerCase()}` : undefined;
}

/** Converts `git@github.com:o/r.git` / `ssh://git@gitlab.com/o/r` for well-known forges to https. */
export function toHttpsUrl(url: string): string | undefined {
  if (/^https?:\/\//i.test(url)) return url.replace(/^(https?:\/\/)[^@\/]*@/i, "$1");
  const scp = /^(?:ssh:\/\/)?[A-Za-z0-9._-]+@(github\.com|gitlab\.com|bitbucket\.org)[:\/](.+)$/.exec(url);
  return scp ? `https://${scp[1]}/${scp[2]!.replace(/^\//, "")}` : undefined;
}

/** Pure: whether two https URLs name the same repository (host case-insensitive; a trailing `/` or `.git` ignored). */
export function sameRepository(a: string, b: string): boolean {
  const norm = (u: string) => {
    const m = /^https?:\/\/(?:[^@\/?#]*@)?([^\/?#]+)(\/[^?#]*)?/i.exec(u);
    if (!m) return null;
    return `${m[1]!.toLowerCase()}${(m[2] ?? "/").replace(/\/+$/, "").replace(/\.git$/i, "").toLowerCase()}`;
  };
  const [x, y] = [norm(a), norm(b)];
  return x !== null && x === y;
}

/** Pure: is a URL ssh (`ssh://…` or scp-like `user@host:path`)? */
export function isSshUrl(url: string): boolean {
  return /^ssh:\/\//i.test(url) || /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!\/\/)/.test(url);
}

/**
 * Judges a repository argument: a host remote's name, or a URL on a host the host repo already talks to.
 * Local paths, file://, ssh and remote helpers are refused (local repos are fetched inside the sandbox).
 */
export function checkRepository(arg: string, ctx: PolicyContext, cwd: string): Decision<{ remote?: string; url: string; ssh?: string; own: boolean }> {
  if (arg.startsWith("-")) return deny(`${JSON.stringify(arg)} is not a repository`);
  if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(arg)) return deny(REMOTE_HELPER);
  if (/^file:/i.test(arg)) return deny("file:// URLs are refused: the host never reads repositories by path for the sandbox");
  if (REMOTE_NAME.test(arg) && !arg.includes("/") && !arg.includes(":")) {
    const url = ctx.remotes[arg];
    if (url === undefined) {
      const names = Object.keys(ctx.remotes).sort();
      return deny(`remote ${JSON.stringify(arg)} is not a remote of the host repository (${names.length ? `its remotes: ${names.join(", ")}` : "it has none"}); the sandbox has the same remotes under the same names`);
    }
    const https = toHttpsUrl(url);
    // An ssh remote (from the host's own config, never a URL the sandbox names) is reached with the host's ssh and
    // agent; one on a forge whose https form is known uses the token instead where the host has one.
    if (isSshUrl(url) && !/[\s\x00-\x1f]/.test(url) && !/^(?:ssh:\/\/)?-/.test(url)) return { ok: true, plan: { remote: arg, url: https ?? url, ssh: url, own: true } };
    if (!https) return deny(`remote ${arg} has URL ${url}, which the bridge cannot reach (only http(s) and ssh)`);
    return { ok: true, plan: { remote: arg, url: https, own: true } };
  }
  if (/^https?:\/\//i.test(arg)) {
    if (/[\s\x00-\x1f]/.test(arg)) return deny("URL contains control characters");
    if (/^https?:\/\/[^\/]*@/i.test(arg)) return deny("URLs with credentials in them are refused");
    // The repository is judged by its path as the forge will read it (credential-scope): one reading, and no query or
    // fragment that git would carry to the forge beside the path the token was given for.
    const path = /^https?:\/\/[^\/?#]+(.*)$/i.exec(arg)?.[1] || "/";
    const c = canonicalPath(path);
    if (!c.ok || c.query !== "" || path.includes("?")) return deny(`${arg}: a repository URL must name one path, read one way (${c.ok ? "no query" : c.reason})`);
    const origin = urlOrigin(arg);
    const extra = ctx.extraRepos ?? [];
    const known = new Set([...Object.values(ctx.remotes).map((u) => urlOrigin(toHttpsUrl(u) ?? "")), ...extra.map((u) => urlOrigin(u))].filter(Boolean));
    if (!origin || !known.has(origin)) {
      return deny(`${origin ?? arg} is not a host that the host repository's remotes use; the bridge only talks to those`);
    }
    // The URL of one of the host repo's own remotes is that remote (its token may be sent); any other repository on
    // that host is reached without the token, as anyone may (a private one then is not found).
    const own = Object.values(ctx.remotes).some((u) => sameRepository(toHttpsUrl(u) ?? "", arg)) || extra.some((u) => sameRepository(u, arg));
    return { ok: true, plan: { url: arg, own } };
  }
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(arg)) return deny(`transport ${arg.split(":")[0]} is refused; only https to the host repo's remote hosts`);
  if (/^[^\/]*@?[^\/]+:/.test(arg) && !arg.startsWith("/") && !arg.startsWith(".")) {
    return deny("ssh remotes are refused; the bridge uses https with the host's token");
  }
  const p = ctx.checkPath(arg, cwd);
  if (!p.ok) return deny(p.reason);
  return deny("local repositories are fetched by git inside the sandbox, not by the bridge");
}

/** Decides on a git invocation. `args` is everything after `git`. */
export function decideGit(args: readonly string[], cwdView: string, ctx: PolicyContext): Decision<GitPlan> {
  const cwdCheck = ctx.checkPath(cwdView, "/");
  if (!cwdCheck.ok) return deny(`working directory: ${cwdCheck.reason}`);
  let cwd = cwdCheck.hostPath;
  let cwdViewNow = cwdView;
  // Global options, up to the subcommand.
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith("-")) break;
    const eq = a.indexOf("=");
    const name = a.startsWith("--") ? (eq === -1 ? a : a.slice(0, eq)) : a.slice(0, 2);
    const refused = refusal(name === "-c" ? "-c" : name);
    if (refused) return deny(refused);
    const long = a.startsWith("--") ? name : GLOBAL.short[a[1]!];
    if (long === undefined) return deny(`git option ${name} is not allowed before the subcommand`);
    const kind = GLOBAL.long[long];
    if (kind === undefined) return deny(`git option ${name} is not allowed before the subcommand`);
    if (kind === "path") {
      const v = a.startsWith("--") ? (eq === -1 ? args[++i] : a.slice(eq + 1)) : a.length > 2 ? a.slice(2) : args[++i];
      if (v === undefined) return deny(`git ${long} needs a path`);
      const p = ctx.checkPath(v, cwdViewNow);
      if (!p.ok) return deny(`${long} ${v}: ${p.reason}`);
      if (long === "-C") {
        cwd = p.hostPath;
        cwdViewNow = v.startsWith("/") ? v : `${cwdViewNow}/${v}`;
      }
    }
  }
  const sub = args[i];
  if (sub === undefined) return deny("no git subcommand given");
  const table = GIT_SUBCOMMANDS[sub];
  if (!table) return deny(`git ${sub} is not something the bridge runs; only ${Object.keys(GIT_SUBCOMMANDS).join(", ")}`);
  const parsed = parseOptions(args.slice(i + 1), table, `git ${sub}`);
  if (!parsed.ok) return parsed;
  const { options, positionals } = parsed.plan;
  const op = sub as GitOp;
  if (op === "pull") {
    const rebase = options.find(([n]) => n === "--rebase");
    if (rebase?.[1] !== undefined && !["true", "false", "merges", "false"].includes(rebase[1])) return deny(`--rebase=${rebase[1]} is not allowed`);
  }
  if (op === "clone") {
    const url = positionals[0];
    if (url === undefined) return deny("git clone needs a URL");
    if (positionals.length > 2) return deny("git clone takes a URL and at most one directory");
    const r = checkRepository(url, ctx, cwdViewNow);
    if (!r.ok) return r;
    if (r.plan.remote !== undefined) return deny("clone a URL, not a remote name");
    const dir = positionals[1];
    if (dir !== undefined) {
      const p = ctx.checkPath(dir, cwdViewNow);
      if (!p.ok) return deny(`clone directory ${dir}: ${p.reason}`);
    }
    return { ok: true, plan: { tool: "git", op, url: r.plan.url, own: r.plan.own, options, rest: positionals.slice(1), refspecs: [], cwd } };
  }
  const repoArg = positionals[0] ?? (ctx.remotes.origin !== undefined ? "origin" : undefined);
  if (repoArg === undefined) return deny(`git ${sub}: no remote named and the host repository has no origin`);
  let r = checkRepository(repoArg, ctx, cwdViewNow);
  if (!r.ok) return r;
  let namedRemote: string | undefined;
  if (op === "push" && ctx.pushRemote && r.plan.remote !== undefined && r.plan.remote !== ctx.pushRemote) {
    // The person sends this sandbox's pushes to one remote (a fork), whichever it names.
    const to = checkRepository(ctx.pushRemote, ctx, cwdViewNow);
    if (!to.ok) return deny(`this sandbox's pushes go to ${ctx.pushRemote} (sbx bridge NAME --push-remote), and ${to.reason}`);
    namedRemote = r.plan.remote;
    r = to;
  }
  const rest = positionals.slice(1);
  const refspecs: Refspec[] = [];
  if (op === "push") {
    if (r.plan.remote === undefined) return deny("push to one of the host repository's remotes by name, not to a URL");
    const del = options.some(([n]) => n === "--delete");
    for (const spec of rest) {
      const rs = parsePushRefspec(del ? `:${spec}` : spec);
      if (!rs.ok) return rs;
      refspecs.push(rs.plan);
    }
  } else if (op === "fetch" || op === "pull") {
    for (const spec of rest) {
      if (spec.includes(":") || spec.startsWith("+")) return deny("fetch refspecs with a destination are refused; name branches only");
      if (!isSafeRefName(spec)) return deny(`${JSON.stringify(spec)} is not a valid ref name`);
    }
  } else if (op === "ls-remote") {
    for (const pat of rest) if (!/^[A-Za-z0-9._\/*-]+$/.test(pat)) return deny(`pattern ${JSON.stringify(pat)} is not allowed`);
  }
  return {
    ok: true,
    plan: { tool: "git", op, ...(r.plan.remote !== undefined ? { remote: r.plan.remote } : {}), url: r.plan.url, ...(r.plan.ssh !== undefined ? { ssh: r.plan.ssh } : {}), ...(namedRemote ? { namedRemote } : {}), own: r.plan.own, options, rest, refspecs, cwd },
  };
}
