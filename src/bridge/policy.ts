// The command bridge's policy as data: which git/gh subcommands and options a sandbox may ask the host to run. The
// decisions on them are git-policy.ts's (decideGit) and gh-policy.ts's (decideGh); a path in the workspace is
// path-check.ts's.
import type { BridgeSubject } from "../core/bridge-settings";

/** What an option does with the next argument. */
type Arg = "none" | "value" | "optional" | "path";

export interface OptTable {
  /** long name (with dashes) → how it takes a value */
  long: Record<string, Arg>;
  /** single letter → long name it stands for */
  short: Record<string, string>;
}

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

export const GLOBAL: OptTable = {
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

/** A refusal may name what the user could approve for this sandbox (the bridge then records it in the approvals queue). */
export type Decision<P> = { ok: true; plan: P } | { ok: false; reason: string; ask?: BridgeSubject };

export const deny = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });

interface Parsed {
  options: Array<[string, string | undefined]>;
  positionals: string[];
}

/** Splits argv by an option table; any option not in it is refused, with the specific reason if one exists. */
export function parseOptions(args: readonly string[], table: OptTable, what: string, refuse: (name: string) => string | undefined = refusal): Decision<Parsed> {
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

export function refusal(name: string): string | undefined {
  if (name === "--upload-pack" || name === "--update-head-ok") {
    return name === "--upload-pack" ? REFUSED_OPTIONS["--upload-pack"] : "--update-head-ok (-u) is not allowed";
  }
  return REFUSED_OPTIONS[name];
}
