// The sandbox's view of the host's ~/.claude: a copy of what may be seen (settings, instructions, commands, agents, this
// project's transcripts), made fresh each time a container is made, used as the lower dir of its ~/.claude overlay.
import { copyFileSync, lstatSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { CLAUDE_DIR_SHOWN, claudeProjectKey } from "../../core/claude-json";

/** Bounds on the copy: a view is settings and one project's history, not a backup of ~/.claude. */
export const CLAUDE_VIEW_LIMITS = { bytes: 64 << 20, entries: 20_000 } as const;

export interface ViewReport {
  copied: number;
  bytes: number;
  /** What was left out and why (a symlink, a special file, over the bounds). */
  skipped: string[];
}

/**
 * Fills `view` (emptied first) with what of `claudeDir` a sandbox of `repo` may see: the entries of CLAUDE_DIR_SHOWN and
 * `projects/<repo's key>`, and the login (`.credentials.json`) only with `login` (`--claude-auth overlay`, which the
 * person chose, warned). Regular files and dirs only, never through a symlink (a link in ~/.claude could lead to any
 * file of the host user's), within CLAUDE_VIEW_LIMITS. A missing ~/.claude gives an empty view.
 */
export function fillClaudeView(claudeDir: string, view: string, repo: string, opts: { login?: boolean } = {}): ViewReport {
  rmSync(view, { recursive: true, force: true });
  mkdirSync(view, { recursive: true, mode: 0o700 });
  const r: ViewReport = { copied: 0, bytes: 0, skipped: [] };
  const copy = (rel: string): void => {
    const from = join(claudeDir, rel);
    let st;
    try {
      st = lstatSync(from);
    } catch {
      return; // not there: nothing to show
    }
    if (st.isSymbolicLink() || (!st.isFile() && !st.isDirectory())) {
      r.skipped.push(`${rel}: not a plain file or dir`);
      return;
    }
    if (r.copied >= CLAUDE_VIEW_LIMITS.entries || r.bytes + (st.isFile() ? st.size : 0) > CLAUDE_VIEW_LIMITS.bytes) {
      r.skipped.push(`${rel}: over the view's bounds`);
      return;
    }
    const to = join(view, rel);
    r.copied++;
    if (st.isFile()) {
      copyFileSync(from, to);
      r.bytes += st.size;
      return;
    }
    mkdirSync(to, { recursive: true, mode: st.mode & 0o777 });
    for (const e of readdirSync(from)) copy(join(rel, e));
  };
  for (const e of CLAUDE_DIR_SHOWN) copy(e);
  if (opts.login) copy(".credentials.json");
  const project = join("projects", claudeProjectKey(repo));
  mkdirSync(join(view, "projects"), { recursive: true, mode: 0o700 });
  copy(project);
  return r;
}
