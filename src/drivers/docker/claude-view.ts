// The sandbox's view of the host's ~/.claude: a copy of what may be seen (settings, instructions, commands, agents,
// this project's transcripts), made through the copy-in scan each time a container is made, used as the lower dir of
// its ~/.claude overlay.
import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import { CLAUDE_DIR_SHOWN, mayBeProjectDir, transcriptOwner } from "../../core/claude-json";
import { VIEW_LIMITS, type CopyIn, type Scanned, type ViewPick, type ViewReport } from "../../secrets/copy-in";

/** @deprecated the bounds of every view: secrets/copy-in.ts VIEW_LIMITS. */
export const CLAUDE_VIEW_LIMITS = VIEW_LIMITS;

/** A file's text through a descriptor opened without following a link ("" when it cannot be read as one). */
function readText(p: string): string {
  let fd: number;
  try {
    fd = openSync(p, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return "";
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > VIEW_LIMITS.fileBytes) return "";
    const buf = Buffer.alloc(st.size);
    const n = readSync(fd, buf, 0, st.size, 0);
    return buf.subarray(0, n).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** Why a projects entry is left out: Claude Code's dir names are lossy (`/a/b-c` and `/a/b/c` share one). */
const NOT_PROVEN = "not provably this project's (the dir's name is shared by other paths; only transcripts whose every cwd is this repo are shown)";

/**
 * Fills `view` (emptied first) through `copyIn` with what of `claudeDir` a sandbox of `repo` may see: the entries of
 * CLAUDE_DIR_SHOWN, and of `projects/` only what provably belongs to `repo`: the dirs whose name Claude Code may have
 * given it, and in them each transcript (`<session>.jsonl`) whose every `cwd` is `repo` or under it, with its session
 * dir (`<session>/`, subagents' transcripts held to the same rule). Anything else there (another path's transcripts
 * under a colliding name, memory files, what names no cwd) is left out and said. The login (`.credentials.json`) only
 * with `login` (`--claude-auth overlay`, which the person chose, warned), copied as it is. Every file is scanned and a
 * hit removed (copy-in.ts); regular files and dirs only, never through a symlink, within VIEW_LIMITS.
 */
export function fillClaudeView(copyIn: CopyIn, claudeDir: string, view: string, repo: string, opts: { login?: boolean } = {}): Scanned<ViewReport> {
  const sessions = new Map<string, boolean>();
  const owner = (abs: string) => transcriptOwner(readText(abs), repo);
  const pick = (rel: string, abs: string, isDir: boolean): ViewPick => {
    if (rel === ".credentials.json") return opts.login ? "as-is" : { out: "" };
    const parts = rel.split("/");
    if (parts[0] !== "projects" || parts.length === 1) return "scan";
    if (parts.length === 2) return isDir && mayBeProjectDir(parts[1]!, repo) ? "scan" : { out: "" };
    const entry = parts[2]!;
    if (parts.length === 3 && !isDir) {
      if (!entry.endsWith(".jsonl")) return { out: NOT_PROVEN };
      const mine = owner(abs) === "mine";
      sessions.set(`${parts[1]}/${entry.slice(0, -".jsonl".length)}`, mine);
      return mine ? "scan" : { out: NOT_PROVEN };
    }
    // A session's own dir (subagents, tool results): shown with its proven transcript; a transcript in it is judged too.
    const session = `${parts[1]}/${entry}`;
    if (!sessions.has(session)) sessions.set(session, owner(join(claudeDir, "projects", parts[1]!, `${entry}.jsonl`)) === "mine");
    if (!sessions.get(session)) return { out: NOT_PROVEN };
    if (!isDir && rel.endsWith(".jsonl") && owner(abs) === "other") return { out: NOT_PROVEN };
    return "scan";
  };
  const r = copyIn.view(claudeDir, view, { only: [...CLAUDE_DIR_SHOWN, ...(opts.login ? [".credentials.json"] : []), "projects"], pick });
  // Claude Code writes this project's transcripts there: the dir is in the view even when the host has none yet.
  mkdirSync(join(view, "projects"), { recursive: true, mode: 0o700 });
  return r;
}
