// Which of a repository's CI workflows a sandbox's push would start, with the repository's secrets: GitHub, Gitea and
// Forgejo Actions workflows read conservatively (anything unclear counts as running), and other CI services' files,
// which build every pushed branch unless told otherwise. Pure: the caller reads the files and parses the YAML.

/** Where GitHub, Gitea and Forgejo read their Actions workflows (each at the repository's root). */
export const WORKFLOW_DIRS = [".github/workflows/", ".gitea/workflows/", ".forgejo/workflows/"] as const;

/** Other CI services' files at the root, whose pipelines run for every pushed branch unless their own rules say not. */
export const OTHER_PUSH_CI = [
  ".gitlab-ci.yml",
  "bitbucket-pipelines.yml",
  ".circleci/config.yml",
  ".travis.yml",
  ".drone.yml",
  ".woodpecker.yml",
  ".woodpecker.yaml",
  ".woodpecker/",
  ".buildkite/pipeline.yml",
  "azure-pipelines.yml",
  "Jenkinsfile",
  ".cirrus.yml",
  "appveyor.yml",
  ".appveyor.yml",
  ".semaphore/semaphore.yml",
  ".build.yml",
  ".builds/",
] as const;

/** The filter GitHub's docs suggest, and sbx's hint: no workflow runs for a branch under any sandbox's prefix. */
export const SBX_BRANCHES_IGNORE = "branches-ignore: ['sbx/**']";

export interface PushRef {
  kind: "branch" | "tag";
  /** The short name (`sbx/demo/x`, `v1`). */
  name: string;
}

/** Whether a workflow file (by its path) is one WORKFLOW_DIRS holds: a .yml or .yaml directly in one of them. */
export function isWorkflowFile(path: string): boolean {
  return WORKFLOW_DIRS.some((d) => path.startsWith(d) && !path.slice(d.length).includes("/") && /\.ya?ml$/.test(path));
}

/**
 * GitHub's filter pattern (`*` within a segment, `**` anything, `?`/`+` zero-or-one/one-or-more of what precedes, `[…]`,
 * `\` escapes) as a RegExp, or null for a pattern sbx does not read with certainty (it then counts as matching).
 */
export function filterPattern(pattern: string): RegExp | null {
  let re = "";
  let atom = false; // something a `?` or `+` may follow
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      const n = pattern[++i];
      if (n === undefined) return null;
      re += n.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
      atom = true;
    } else if (c === "*") {
      if (pattern[i + 1] === "*") {
        re += ".*";
        i++;
      } else re += "[^/]*";
      atom = false;
    } else if (c === "?" || c === "+") {
      if (!atom) return null;
      re += c;
      atom = false;
    } else if (c === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end === -1) return null;
      const body = pattern.slice(i + 1, end);
      if (body === "" || /[\\[]/.test(body)) return null;
      re += `[${body.replace(/\^/g, "\\^")}]`;
      i = end;
      atom = true;
    } else {
      re += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
      atom = true;
    }
  }
  try {
    return new RegExp(`^${re}$`);
  } catch {
    return null;
  }
}

/** A filter list as GitHub reads it: the last pattern that matches decides, `!` negating; unreadable counts as a match. */
function listMatches(patterns: readonly string[], name: string): boolean {
  let matched = false;
  for (const p of patterns) {
    const neg = p.startsWith("!");
    const re = filterPattern(neg ? p.slice(1) : p);
    // Unsure: assume the outcome under which the workflow runs for this name.
    if (re === null ? !neg : re.test(name)) matched = !neg;
  }
  return matched;
}

/** A YAML filter's value as a list of strings, or null when it is something else (then unclear). */
function strings(v: unknown): string[] | null {
  if (typeof v === "string") return [v];
  if (Array.isArray(v) && v.every((x) => typeof x === "string" || typeof x === "number")) return v.map(String);
  return null;
}

/** The events of a workflow's `on:` with their settings (null: no settings), or null when unclear. */
function eventsOf(doc: unknown): Map<string, unknown> | null {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return null;
  const d = doc as Record<string, unknown>;
  // YAML 1.1 parsers read a bare `on` key as the boolean true.
  const on = "on" in d ? d.on : "true" in d ? d.true : undefined;
  if (typeof on === "string") return new Map([[on, null]]);
  if (Array.isArray(on)) return on.every((e) => typeof e === "string") ? new Map(on.map((e: string) => [e, null])) : null;
  if (on !== null && typeof on === "object") return new Map(Object.entries(on as Record<string, unknown>));
  return null;
}

/**
 * Why a workflow runs on a push of `ref` (which creates the ref when `creates`), or null when it does not. `doc` is the
 * parsed YAML, or an Error for a file that could not be read or parsed (which counts as running: sbx cannot tell).
 */
export function pushTrigger(doc: unknown, ref: PushRef, creates = true): string | null {
  if (doc instanceof Error) return `not readable (${doc.message.slice(0, 80)}): it may run`;
  const events = eventsOf(doc);
  if (events === null) return "its `on:` is not one sbx reads: it may run";
  if (creates && events.has("create")) return `on: create, for every new ${ref.kind}`;
  if (!events.has("push")) return null;
  const push = events.get("push");
  if (push === null || push === undefined) return "on: push, for every branch and tag";
  if (typeof push !== "object" || Array.isArray(push)) return "on: push, with settings sbx does not read: it may run";
  const f = push as Record<string, unknown>;
  const [inc, exc, other, otherExc] = ref.kind === "branch" ? ["branches", "branches-ignore", "tags", "tags-ignore"] : ["tags", "tags-ignore", "branches", "branches-ignore"];
  const only = f[inc!];
  const ignore = f[exc!];
  if (only === undefined && ignore === undefined) {
    // Filters for the other kind only: this kind never triggers it.
    if (f[other!] !== undefined || f[otherExc!] !== undefined) return null;
    return `on: push, for every ${ref.kind}`;
  }
  if (only !== undefined) {
    const list = strings(only);
    if (list === null) return `on: push, ${inc} sbx does not read: it may run`;
    return listMatches(list, ref.name) ? `on: push, ${inc} ${JSON.stringify(list)} includes ${ref.name}` : null;
  }
  const list = strings(ignore);
  if (list === null) return `on: push, ${exc} sbx does not read: it may run`;
  return list.some((p) => {
    const re = filterPattern(p);
    return re !== null && re.test(ref.name);
  })
    ? null
    : `on: push, ${exc} ${JSON.stringify(list)} does not cover ${ref.name}`;
}

export interface WorkflowHit {
  path: string;
  why: string;
}

/**
 * The note a person reads (at `sbx doctor`, or on a sandbox's first push): which workflows a push of a sandbox's branch
 * starts with the repository's secrets, and the two ways out. Empty when there are none.
 */
export function pushWorkflowNote(hits: readonly WorkflowHit[], other: readonly string[], sandbox?: string): string[] {
  if (hits.length === 0 && other.length === 0) return [];
  const name = sandbox ?? "NAME";
  return [
    "a branch a sandbox pushes runs the repository's CI, with the repository's secrets, on the sandbox's code:",
    ...hits.map((h) => `  ${h.path}: ${h.why}`),
    ...other.map((p) => `  ${p}: builds every pushed branch unless its own rules say not`),
    ...(hits.length ? [`keep sandbox branches out: add \`${SBX_BRANCHES_IGNORE}\` under \`on: push:\` in each workflow above`] : []),
    ...(other.length ? ["(and a rule that skips branches under sbx/ in each other CI file above)"] : []),
    `or send the sandbox's pushes to a fork: sbx bridge ${name} --push-remote <your fork's remote>`,
  ];
}
