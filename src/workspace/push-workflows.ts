// Reads the CI files of one commit (the host repo's default branch for `sbx doctor`, a pushed commit in the gate for a
// sandbox's first push) and says which would run, with the repository's secrets, for a push of a sandbox's branch.
import { isWorkflowFile, OTHER_PUSH_CI, pushTrigger, WORKFLOW_DIRS, type PushRef, type WorkflowHit } from "../core/push-workflows";

/** A git in the repository that holds the commit (hooks and config already pinned by the caller). */
export type GitRun = (args: string[]) => Promise<{ exitCode: number; stdout: string; stderr: string }>;

/** At most this many workflow files are read, each at most MAX_BYTES; the rest count as running (sbx cannot tell). */
export const MAX_FILES = 64;
export const MAX_BYTES = 256 * 1024;

export interface PushWorkflows {
  hits: WorkflowHit[];
  /** Other CI services' files (OTHER_PUSH_CI) the commit has. */
  other: string[];
}

/**
 * Which workflows of commit `rev` run for a push of each of `refs` (creating them when `creates`), and which other CI
 * files it has. A workflow that cannot be read or parsed counts as running.
 * runs: git ls-tree -r -l -z <rev> -- <workflow dirs> <other CI files>; git cat-file blob <oid> (each workflow)
 */
export async function pushWorkflows(git: GitRun, rev: string, refs: readonly PushRef[], creates: boolean): Promise<PushWorkflows> {
  const dirs = WORKFLOW_DIRS.map((d) => d.slice(0, -1));
  const others = OTHER_PUSH_CI.map((p) => (p.endsWith("/") ? p.slice(0, -1) : p));
  const ls = await git(["ls-tree", "-r", "-l", "-z", rev, "--", ...dirs, ...others]);
  if (ls.exitCode !== 0) throw new Error(`git ls-tree ${rev}: ${ls.stderr.trim()}`);
  const files: { path: string; oid: string; size: number }[] = [];
  const other = new Set<string>();
  for (const entry of ls.stdout.split("\0")) {
    const m = /^\d+ blob ([0-9a-f]{40,64}) +(\d+|-)\t([\s\S]+)$/.exec(entry);
    if (!m) continue;
    const path = m[3]!;
    if (isWorkflowFile(path)) files.push({ path, oid: m[1]!, size: m[2] === "-" ? Infinity : Number(m[2]) });
    else {
      const o = OTHER_PUSH_CI.find((p) => (p.endsWith("/") ? path.startsWith(p) : path === p));
      if (o) other.add(o);
    }
  }
  const hits: WorkflowHit[] = [];
  for (const [i, f] of files.entries()) {
    let doc: unknown;
    if (i >= MAX_FILES) doc = new Error(`more than ${MAX_FILES} workflows`);
    else if (f.size > MAX_BYTES) doc = new Error(`larger than ${MAX_BYTES} bytes`);
    else {
      const r = await git(["cat-file", "blob", f.oid]);
      try {
        doc = r.exitCode === 0 ? Bun.YAML.parse(r.stdout) : new Error("unreadable");
      } catch (e) {
        doc = e instanceof Error ? e : new Error(String(e));
      }
    }
    const why = [...new Set(refs.map((ref) => pushTrigger(doc, ref, creates)).filter((w): w is string => w !== null))];
    if (why.length > 0) hits.push({ path: f.path, why: why.join("; ") });
  }
  return { hits, other: [...other] };
}
