// The push gate's secret scan over `git log -p --cc -a -U0` output: every line a pushed commit adds, merges included.
import { SECRET_PATTERNS, scanText, type SecretFinding, type SecretPattern } from "../core/secrets";

/**
 * `git log` arguments for the scan (commits on stdin). Why each one:
 * --cc: a merge's own lines (in no parent: an "evil merge") are shown; plain -p shows nothing for merges.
 * -a: files git thinks binary (a NUL byte) are diffed as text, so a key in them is seen.
 * -U0: no context lines, so less output to read; hunk headers still give the new line numbers.
 * --full-index: whole blob ids, for the binary files a combined diff will not show as text.
 * --no-textconv/--no-ext-diff: no driver runs; --no-renames: a renamed file's lines all count as added.
 */
export const SCAN_LOG_ARGS = ["log", "-p", "--cc", "-a", "-U0", "--full-index", "--no-color", "--no-textconv", "--no-ext-diff", "--no-renames", "--format=commit %H", "--stdin"] as const;

/** A file a merge changed against every parent whose combined diff git shows only as "Binary files differ". */
export interface UnshownBlob {
  commit?: string;
  file: string;
  blob: string;
}

export interface LogScan {
  findings: SecretFinding[];
  /** Blobs to scan whole (combined diffs ignore -a); their lines are new to every parent of the merge. */
  unshown: UnshownBlob[];
}

const HUNK = /^(@@+) (?:-\d+(?:,\d+)? )+\+(\d+)(?:,\d+)? @@/;
const COMMIT = /^commit ([0-9a-f]{40,64})$/;
const ZERO = /^0+$/;

/**
 * Reads `git log -p --cc` output. In a hunk with n parents each line starts with n marker columns:
 * a `-` in any column means the line is not in the result; all `+` means it is in no parent, so it is
 * what this commit adds and is scanned; a mix of ` ` and `+` came from a parent (scanned where that parent
 * added it, or already known). With one parent this is the ordinary unified diff.
 */
export function scanLog(text: string, patterns: readonly SecretPattern[] = SECRET_PATTERNS): LogScan {
  const findings: SecretFinding[] = [];
  const unshown: UnshownBlob[] = [];
  let commit: string | undefined;
  let file = "";
  let blob = "";
  let line = 0;
  let parents = 1;
  let inHunk = false;
  const lines = text.split("\n");
  for (let k = 0; k < lines.length; k++) {
    const raw = lines[k]!;
    if (inHunk) {
      const c0 = raw.charCodeAt(0);
      // Fast path for the common one-parent case.
      if (parents === 1) {
        if (c0 === 43 /* + */) {
          const f = firstMatch(raw, 1, patterns);
          if (f) findings.push({ file, line, pattern: f.id, description: f.description, ...(commit ? { commit } : {}) });
          line++;
          continue;
        }
        if (c0 === 45 /* - */ || c0 === 92 /* \ */) continue;
        if (c0 === 32 /* space */) {
          line++;
          continue;
        }
      } else if (raw.length >= parents && /^[ +-]+$/.test(raw.slice(0, parents))) {
        const cols = raw.slice(0, parents);
        if (!cols.includes("-")) {
          if (!cols.includes(" ")) {
            const f = firstMatch(raw, parents, patterns);
            if (f) findings.push({ file, line, pattern: f.id, description: f.description, ...(commit ? { commit } : {}) });
          }
          line++;
        }
        continue;
      } else if (c0 === 92) continue;
      inHunk = false;
    }
    const c = COMMIT.exec(raw);
    if (c) {
      commit = c[1];
      file = "";
      continue;
    }
    if (raw.startsWith("diff --git ") || raw.startsWith("diff --cc ") || raw.startsWith("diff --combined ")) {
      file = raw.startsWith("diff --git ") ? "" : unquote(raw.slice(raw.indexOf(" ", 5) + 1));
      blob = "";
      continue;
    }
    if (raw.startsWith("index ")) {
      // `index a..b mode` or, combined, `index a,b..r`: the result blob follows the "..".
      const m = /\.\.([0-9a-f]{40,64})/.exec(raw);
      blob = m && !ZERO.test(m[1]!) ? m[1]! : "";
      continue;
    }
    if (raw.startsWith("+++ ")) {
      const p = raw.slice(4);
      file = p === "/dev/null" ? "" : unquote(p).replace(/^b\//, "");
      continue;
    }
    if (raw.startsWith("Binary files ") && raw.endsWith(" differ")) {
      // Only combined diffs print this with -a; the result is new to every parent, so scan it whole.
      if (blob) unshown.push({ ...(commit ? { commit } : {}), file, blob });
      continue;
    }
    const h = HUNK.exec(raw);
    if (h) {
      inHunk = true;
      parents = h[1]!.length - 1;
      line = Number(h[2]);
    }
  }
  return { findings, unshown };
}

/** Scans a whole blob that a combined diff did not show, as lines of `file` in `commit`. */
export function scanUnshown(u: UnshownBlob, content: string, patterns: readonly SecretPattern[] = SECRET_PATTERNS): SecretFinding[] {
  return scanText(content, u.file, patterns).map((f) => ({ ...f, ...(u.commit ? { commit: u.commit } : {}) }));
}

function firstMatch(raw: string, from: number, patterns: readonly SecretPattern[]): SecretPattern | undefined {
  const s = raw.slice(from);
  for (const p of patterns) if (p.regex.test(s)) return p;
  return undefined;
}

/** git quotes paths with unusual bytes as C strings: "b/a\tb". */
function unquote(p: string): string {
  if (!p.startsWith('"')) return p;
  try {
    return JSON.parse(p) as string;
  } catch {
    return p.slice(1, -1);
  }
}
