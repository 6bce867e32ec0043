// The command bridge's policy as data: which git/gh subcommands and options a sandbox may ask the host to run.
import { REMOTE_NAME, type BridgeSubject, type GhTarget } from "../core/bridge-settings";
import { canonicalPath } from "../core/credential-scope";

/** What an option does with the next argument. */
type Arg = "none" | "value" | "optional" | "path";

interface OptTable {
  /** long name (with dashes) → how it takes a value */
  long: Record<string, Arg>;
  /** single letter → long name it stands for */
  short: Record<string, string>;
}

const REMOTE_HELPER = "remote helpers (<transport>::<address>, e.g. ext::) can run arbitrary commands and are refused";
const CONFIG = "per-command config (-c/--config-env) could make the host run a program or rewrite URLs; it is refused";

/** Options refused everywhere, with the reason shown to whoever asked. */
export const REFUSED_OPTIONS: Record<string, string> = {
  "-c": CONFIG,
  "--config": CONFIG,
  "--config-env": CONFIG,
  "--exec-path": "--exec-path would choose which programs git runs on the host; it is refused",
  "--upload-pack": "--upload-pack/-u would choose the program the host runs to fetch; it is refused",
  "--receive-pack": "--receive-pack would choose the program run to push; it is refused",
  "--exec": "--exec would choose the program run for the transfer; it is refused",
  "--template": "--template would copy hooks into a repository; it is refused",
  "--reference": "--reference/--shared would read objects from another repository on the host; it is refused",
  "--reference-if-able": "--reference would read objects from another repository on the host; it is refused",
  "--shared": "--reference/--shared would read objects from another repository on the host; it is refused",
  "--separate-git-dir": "--separate-git-dir would place a repository outside the workspace; it is refused",
  "--recurse-submodules": "submodule URLs come from the sandbox's files; recursing into them is refused",
  "--server-option": "server options are refused",
  "--namespace": "--namespace is refused",
  "--super-prefix": "--super-prefix is refused",
  "--mirror": "--mirror would overwrite or delete every ref on the remote; push refs by name",
  "--receive-pack=": "--receive-pack is refused",
  "--repo": "--repo would name a different destination; push to a remote by name",
  "--signed": "signing pushes would use keys on the host; it is refused",
  "--web": "--web would open a browser on the host; it is refused",
  "--editor": "--editor would open an editor on the host; it is refused",
  "--hostname": "--hostname would send the token to another host; it is refused",
};

const GLOBAL: OptTable = {
  long: {
    "--git-dir": "path",
    "--work-tree": "path",
    "--no-pager": "none",
    "--paginate": "none",
    "--no-replace-objects": "none",
    "--no-optional-locks": "none",
    "--literal-pathspecs": "none",
  },
  short: { C: "-C", P: "--no-pager", p: "--paginate" },
};
GLOBAL.long["-C"] = "path";

const COMMON_NET: Record<string, Arg> = {
  "--quiet": "none",
  "--verbose": "none",
  "--progress": "none",
  "--no-progress": "none",
  "--ipv4": "none",
  "--ipv6": "none",
};

const FETCH_OPTS: Record<string, Arg> = {
  ...COMMON_NET,
  "--prune": "none",
  "--no-prune": "none",
  "--tags": "none",
  "--no-tags": "none",
  "--force": "none",
  "--dry-run": "none",
  "--jobs": "value",
  "--no-write-fetch-head": "none",
  "--write-fetch-head": "none",
  "--atomic": "none",
  "--append": "none",
  "--keep": "none",
  "--show-forced-updates": "none",
  "--no-show-forced-updates": "none",
};

export const GIT_SUBCOMMANDS: Record<string, OptTable> = {
  push: {
    long: {
      ...COMMON_NET,
      "--force": "none",
      "--force-with-lease": "none",
      "--no-force-with-lease": "none",
      "--force-if-includes": "none",
      "--set-upstream": "none",
      "--dry-run": "none",
      "--delete": "none",
      "--atomic": "none",
      "--no-atomic": "none",
      "--no-verify": "none",
      "--verify": "none",
      "--thin": "none",
      "--no-thin": "none",
      "--push-option": "value",
    },
    short: { f: "--force", u: "--set-upstream", n: "--dry-run", d: "--delete", q: "--quiet", v: "--verbose", o: "--push-option", "4": "--ipv4", "6": "--ipv6" },
  },
  fetch: {
    long: FETCH_OPTS,
    short: { q: "--quiet", v: "--verbose", p: "--prune", t: "--tags", n: "--no-tags", f: "--force", j: "--jobs", a: "--append", k: "--keep", "4": "--ipv4", "6": "--ipv6", u: "--update-head-ok" },
  },
  pull: {
    long: {
      ...FETCH_OPTS,
      "--rebase": "optional",
      "--no-rebase": "none",
      "--ff": "none",
      "--no-ff": "none",
      "--ff-only": "none",
      "--autostash": "none",
      "--no-autostash": "none",
      "--edit": "none",
      "--no-edit": "none",
      "--squash": "none",
      "--no-squash": "none",
      "--commit": "none",
      "--no-commit": "none",
      "--stat": "none",
      "--no-stat": "none",
      "--signoff": "none",
      "--strategy": "value",
      "--strategy-option": "value",
      "--allow-unrelated-histories": "none",
    },
    short: { q: "--quiet", v: "--verbose", p: "--prune", t: "--tags", f: "--force", r: "--rebase", e: "--edit", n: "--no-stat", s: "--strategy", X: "--strategy-option", j: "--jobs", "4": "--ipv4", "6": "--ipv6", u: "--upload-pack" },
  },
  "ls-remote": {
    long: {
      "--heads": "none",
      "--branches": "none",
      "--tags": "none",
      "--refs": "none",
      "--quiet": "none",
      "--exit-code": "none",
      "--symref": "none",
      "--sort": "value",
      "--get-url": "none",
    },
    short: { h: "--heads", b: "--branches", t: "--tags", q: "--quiet", u: "--upload-pack", o: "--server-option" },
  },
  clone: {
    long: {
      ...COMMON_NET,
      "--branch": "value",
      "--single-branch": "none",
      "--no-single-branch": "none",
      "--no-tags": "none",
      "--depth": "value",
      "--origin": "value",
      "--no-checkout": "none",
      "--bare": "none",
      "--jobs": "value",
    },
    short: { b: "--branch", q: "--quiet", v: "--verbose", o: "--origin", n: "--no-checkout", j: "--jobs", u: "--upload-pack", c: "--config", s: "--shared", l: "--local" },
  },
};

/**
 * gh: group → subcommand → options (long names; short letters map to them), and what it does to the forge: nothing
 * (a read), `creates` a pull request, issue or gist (which the sandbox may then change), or `changes` the one its first
 * argument names (which asks the person unless this sandbox opened it).
 */
interface GhSub {
  long: Record<string, Arg>;
  short: Record<string, string>;
  acts?: "creates" | "changes";
}
const PR_FILTERS: Record<string, Arg> = {
  "--state": "value",
  "--limit": "value",
  "--author": "value",
  "--assignee": "value",
  "--label": "value",
  "--base": "value",
  "--head": "value",
  "--search": "value",
  "--json": "value",
  "--jq": "value",
  "--template": "value",
  "--draft": "none",
};
const LIST_SHORT = { s: "--state", L: "--limit", A: "--author", a: "--assignee", l: "--label", B: "--base", H: "--head", S: "--search", q: "--jq", t: "--template", d: "--draft" };
const VIEW: GhSub = { long: { "--comments": "none", "--json": "value", "--jq": "value", "--template": "value" }, short: { c: "--comments", q: "--jq", t: "--template" } };
const BODY_SHORT = { b: "--body", F: "--body-file", t: "--title" };

/**
 * `gh pr|issue comment`: a new comment, or (--edit-last, --delete-last; gh ≥ 2.6x for the latter and --yes) the last
 * comment of the token's owner there, which is the person's, whoever opened the pull request or issue (LAST_COMMENT).
 */
const COMMENT: GhSub = { long: { "--body": "value", "--body-file": "path", "--edit-last": "none", "--delete-last": "none", "--yes": "none" }, short: { b: "--body", F: "--body-file" }, acts: "changes" };

/** Options that act on the token owner's last comment rather than add one: a change to someone else's text (the person's). */
export const LAST_COMMENT = ["--edit-last", "--delete-last"] as const;

export const GH_COMMANDS: Record<string, Record<string, GhSub>> = {
  pr: {
    create: {
      long: {
        "--title": "value",
        "--body": "value",
        "--body-file": "path",
        "--base": "value",
        "--head": "value",
        "--draft": "none",
        "--fill": "none",
        "--fill-first": "none",
        "--fill-verbose": "none",
        "--label": "value",
        "--assignee": "value",
        "--reviewer": "value",
        "--milestone": "value",
        "--no-maintainer-edit": "none",
        "--dry-run": "none",
      },
      short: { ...BODY_SHORT, B: "--base", H: "--head", d: "--draft", f: "--fill", l: "--label", a: "--assignee", r: "--reviewer", m: "--milestone" },
      acts: "creates",
    },
    view: VIEW,
    list: { long: PR_FILTERS, short: LIST_SHORT },
    status: { long: { "--json": "value", "--jq": "value", "--conflict-status": "none" }, short: { q: "--jq", c: "--conflict-status" } },
    checks: { long: { "--watch": "none", "--fail-fast": "none", "--required": "none", "--json": "value", "--jq": "value", "--interval": "value" }, short: { q: "--jq", i: "--interval" } },
    diff: { long: { "--name-only": "none", "--patch": "none", "--color": "value" }, short: {} },
    comment: COMMENT,
    edit: {
      long: {
        "--title": "value",
        "--body": "value",
        "--body-file": "path",
        "--base": "value",
        "--add-label": "value",
        "--remove-label": "value",
        "--add-reviewer": "value",
        "--remove-reviewer": "value",
        "--add-assignee": "value",
        "--remove-assignee": "value",
        "--milestone": "value",
      },
      short: { ...BODY_SHORT, B: "--base", m: "--milestone" },
      acts: "changes",
    },
    ready: { long: { "--undo": "none" }, short: {}, acts: "changes" },
    close: { long: { "--comment": "value" }, short: { c: "--comment" }, acts: "changes" },
    reopen: { long: { "--comment": "value" }, short: { c: "--comment" }, acts: "changes" },
  },
  issue: {
    view: VIEW,
    list: { long: PR_FILTERS, short: LIST_SHORT },
    create: {
      long: { "--title": "value", "--body": "value", "--body-file": "path", "--label": "value", "--assignee": "value", "--milestone": "value" },
      short: { ...BODY_SHORT, l: "--label", a: "--assignee", m: "--milestone" },
      acts: "creates",
    },
    comment: COMMENT,
    status: { long: { "--json": "value", "--jq": "value" }, short: { q: "--jq" } },
  },
  repo: { view: { long: { "--json": "value", "--jq": "value", "--branch": "value" }, short: { q: "--jq", b: "--branch" } } },
  run: {
    list: { long: { "--limit": "value", "--branch": "value", "--workflow": "value", "--status": "value", "--json": "value", "--jq": "value" }, short: { L: "--limit", b: "--branch", w: "--workflow", s: "--status", q: "--jq" } },
    view: { long: { "--log": "none", "--log-failed": "none", "--verbose": "none", "--exit-status": "none", "--job": "value", "--json": "value", "--jq": "value" }, short: { v: "--verbose", j: "--job", q: "--jq" } },
    watch: { long: { "--exit-status": "none", "--interval": "value" }, short: { i: "--interval" } },
  },
};

/**
 * `gh gist`, once the user switched it on: a gist is made from one file of the workspace, which the bridge reads (gh,
 * run on the host, would read any host path it was given); only gists this sandbox made are edited or deleted without
 * asking.
 */
export const GH_GIST: Record<string, GhSub> = {
  list: { long: { "--limit": "value", "--public": "none", "--secret": "none" }, short: { L: "--limit" } },
  view: { long: { "--raw": "none", "--filename": "value", "--files": "none" }, short: { r: "--raw", f: "--filename" } },
  create: { long: { "--desc": "value", "--public": "none", "--filename": "value" }, short: { d: "--desc", p: "--public", f: "--filename" }, acts: "creates" },
  edit: { long: { "--desc": "value" }, short: { d: "--desc" }, acts: "changes" },
  delete: { long: {}, short: {}, acts: "changes" },
};

/** gh groups the user can switch on; everything else outside GH_COMMANDS is refused. */
export const GH_OPT_IN = { api: "ghApi", gist: "ghGist" } as const;

export interface PolicyOptions {
  /** `gh api` runs any request with the token: off unless the user enables it. */
  ghApi: boolean;
  /** `gh gist` publishes files: off unless the user enables it. */
  ghGist: boolean;
}

/** Maps a path as the sandbox names it to a real host path, or says why it cannot be used. */
export type PathCheck = (p: string, cwd: string) => { ok: true; hostPath: string } | { ok: false; reason: string };

export interface PolicyContext {
  /** Remote name → URL, read from the HOST repo's config (never the clone's). */
  remotes: Record<string, string>;
  /** More repositories (https URLs) this sandbox's token may go to (`sbx bridge NAME --allow-repo URL`). */
  extraRepos?: readonly string[];
  checkPath: PathCheck;
  options: PolicyOptions;
  /** The remote every push goes to instead of the one named (`sbx bridge NAME --push-remote`), when the person set one. */
  pushRemote?: string | null;
}

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
  /** What it does to the forge (see GhSub): none for a read. */
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

/** A refusal may name what the user could approve for this sandbox (the bridge then records it in the approvals queue). */
export type Decision<P> = { ok: true; plan: P } | { ok: false; reason: string; ask?: BridgeSubject };

const deny = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });


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

interface Parsed {
  options: Array<[string, string | undefined]>;
  positionals: string[];
}

/** Splits argv by an option table; any option not in it is refused, with the specific reason if one exists. */
function parseOptions(args: readonly string[], table: OptTable, what: string, refuse: (name: string) => string | undefined = refusal): Decision<Parsed> {
  const options: Array<[string, string | undefined]> = [];
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const name = eq === -1 ? a : a.slice(0, eq);
      const inline = eq === -1 ? undefined : a.slice(eq + 1);
      const refused = refuse(name);
      if (refused) return deny(refused);
      const kind = table.long[name];
      if (kind === undefined) return deny(`${what}: option ${name} is not allowed`);
      if (kind === "none") {
        if (inline !== undefined) return deny(`${what}: option ${name} takes no value`);
        options.push([name, undefined]);
      } else if (kind === "optional") {
        options.push([name, inline]);
      } else {
        const v = inline ?? args[++i];
        if (v === undefined) return deny(`${what}: option ${name} needs a value`);
        options.push([name, v]);
      }
      continue;
    }
    if (a.startsWith("-") && a.length > 1) {
      for (let j = 1; j < a.length; j++) {
        const ch = a[j]!;
        const long = table.short[ch] ?? (ch === "c" ? "-c" : undefined);
        if (long === undefined) return deny(`${what}: option -${ch} is not allowed`);
        const refused = refuse(long);
        if (refused) return deny(refused);
        const kind = table.long[long];
        if (kind === undefined) return deny(`${what}: option -${ch} (${long}) is not allowed`);
        if (kind === "none" || kind === "optional") {
          options.push([long, undefined]);
          continue;
        }
        const rest = a.slice(j + 1);
        const v = rest !== "" ? rest : args[++i];
        if (v === undefined) return deny(`${what}: option -${ch} needs a value`);
        options.push([long, v]);
        break;
      }
      continue;
    }
    positionals.push(a);
  }
  return { ok: true, plan: { options, positionals } };
}

function refusal(name: string): string | undefined {
  if (name === "--upload-pack" || name === "--update-head-ok") {
    return name === "--upload-pack" ? REFUSED_OPTIONS["--upload-pack"] : "--update-head-ok (-u) is not allowed";
  }
  return REFUSED_OPTIONS[name];
}

/** The origin (scheme://host[:port]) of an http(s) URL, or undefined. */
export function urlOrigin(url: string): string | undefined {
  const m = /^(https?):\/\/(?:[^@\/?#]*@)?([^\/?#]+)/i.exec(url);
  return m ? `${m[1]!.toLowerCase()}://${m[2]!.toLowerCase()}` : undefined;
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

/** Converts `git@github.com:o/r.git` / `ssh://git@gitlab.com/o/r` for well-known forges to https. */
export function toHttpsUrl(url: string): string | undefined {
  if (/^https?:\/\//i.test(url)) return url.replace(/^(https?:\/\/)[^@\/]*@/i, "$1");
  const scp = /^(?:ssh:\/\/)?[A-Za-z0-9._-]+@(github\.com|gitlab\.com|bitbucket\.org)[:\/](.+)$/.exec(url);
  return scp ? `https://${scp[1]}/${scp[2]!.replace(/^\//, "")}` : undefined;
}

/**
 * Judges a repository argument: a host remote's name, or a URL on a host the host repo already talks to.
 * Local paths, file://, ssh and remote helpers are refused (local repos are fetched inside the sandbox).
 */
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

export interface PathCheckerOptions {
  /** The workspace as a host path. */
  workspace: string;
  /** The workspace as the sandbox sees it (Docker mounts the clone at the host repo's path). */
  workspaceView: string;
  /** realpath(3); returns null when the path does not exist. */
  realpath: (p: string) => string | null;
}

function normalize(p: string): string {
  const out: string[] = [];
  for (const c of p.split("/")) {
    if (c === "" || c === ".") continue;
    if (c === "..") out.pop();
    else out.push(c);
  }
  return "/" + out.join("/");
}

/**
 * Builds the path check: a sandbox path is mapped into the workspace's host path, then its realpath (or
 * its nearest existing parent's) must be the workspace itself or below it — exact prefix plus "/".
 */
export function makePathChecker(o: PathCheckerOptions): PathCheck {
  const viewRoot = normalize(o.workspaceView);
  return (p, cwd) => {
    if (p.includes("\0")) return { ok: false, reason: "path contains a NUL byte" };
    if (/^file:/i.test(p)) return { ok: false, reason: "file:// URLs are refused" };
    const abs = normalize(p.startsWith("/") ? p : `${cwd}/${p}`);
    if (abs !== viewRoot && !abs.startsWith(viewRoot + "/")) return { ok: false, reason: `${p} is outside the sandbox's workspace` };
    const rootReal = o.realpath(o.workspace);
    if (rootReal === null) return { ok: false, reason: "the sandbox's workspace is missing" };
    let host = o.workspace + abs.slice(viewRoot.length);
    let suffix = "";
    let real = o.realpath(host);
    while (real === null) {
      const cut = host.lastIndexOf("/");
      if (cut <= 0) return { ok: false, reason: `${p} is outside the sandbox's workspace` };
      suffix = host.slice(cut) + suffix;
      host = host.slice(0, cut);
      real = o.realpath(host);
    }
    if (real !== rootReal && !real.startsWith(rootReal + "/")) return { ok: false, reason: `${p} resolves outside the sandbox's workspace` };
    return { ok: true, hostPath: real + suffix };
  };
}
