// The push gate's secret scan: `git log -p --cc -a -U0 --pretty=raw` read as it streams (every line a pushed commit adds, merges included, and every commit message), and annotated tags' messages.
import { SECRET_PATTERNS, formatFindings, scanLine, scanText, type SecretFinding, type SecretPattern } from "../core/secrets";
import { printable } from "../core/printable";

/**
 * `git log` arguments for the scan (commits on stdin). Why each one:
 * --pretty=raw: each commit's headers and whole message (indented four spaces), so messages are scanned too.
 * --cc: a merge's own lines (in no parent: an "evil merge") are shown; plain -p shows nothing for merges.
 * -a: files git thinks binary (a NUL byte) are diffed as text, so a key in them is seen.
 * -U0: no context lines, so less output to read; hunk headers still give the new line numbers.
 * --full-index: whole blob ids, for the binary files a combined diff will not show as text.
 * --no-textconv/--no-ext-diff: no driver runs; --no-renames: a renamed file's lines all count as added.
 * --no-decorate/--no-show-signature: nothing but the commit line before the headers.
 * --ignore-missing (before --stdin, which reads at once): a known tip (^oid) the gate cannot see cuts nothing instead of
 * failing the push; a pushed tip it cannot see is refused by the caller (the log does not show it).
 */
export const SCAN_LOG_ARGS = ["log", "-p", "--cc", "-a", "-U0", "--full-index", "--no-color", "--no-textconv", "--no-ext-diff", "--no-renames", "--no-decorate", "--no-show-signature", "--pretty=raw", "--ignore-missing", "--stdin"] as const;

/** Where a finding outside a file's lines was: shown in place of the file name. */
export const COMMIT_MESSAGE = "commit message";
export const COMMIT_HEADER = "commit header";
export const TAG_MESSAGE = "tag message";

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
  /** Blobs that look like gzip or zip (by name, or by the first bytes a hunk shows): unpacked and scanned. */
  archives: UnshownBlob[];
}

/** Names of files that are gzip or zip inside (whatever their first bytes show in a diff). */
const ARCHIVE_NAME = /\.(?:gz|tgz|taz|zip|jar|war|ear|aar|apk|whl|egg|nupkg|vsix|xpi|crx|docx|xlsx|pptx|odt|ods|odp|epub|ipa)$/i;
/** A gzip's or zip's first bytes as git's text output shows them (0x8b is not UTF-8: it reads as U+FFFD). */
const ARCHIVE_MAGIC = /^(?:\x1f\uFFFD\x08|PK\x03\x04)/;

const HUNK = /^(@@+) (?:-\d+(?:,\d+)? )+\+(\d+)(?:,\d+)? @@/;
const COMMIT = /^commit ([0-9a-f]{40,64})$/;
const ZERO = /^0+$/;
/** Headers git itself checks to be object ids or a type name (index-pack --strict): nothing the sandbox chose is in them. */
const ID_HEADERS = new Set(["tree", "parent", "object", "type"]);

const enum State {
  /** Between files, or before the first commit. */
  Diff,
  /** Inside a hunk. */
  Hunk,
  /** After `commit <id>`, until the blank line: git prints the object's headers as stored. */
  Header,
  /** The message: every line indented four spaces by git. */
  Message,
}

/**
 * An incremental reader of `git log -p --cc --pretty=raw` output: feed it chunks as git writes them.
 *
 * A commit's headers run to the first blank line (git always prints one) and are never read as diff
 * lines, whatever a crafted header says; every message line is indented, so the first line that is not
 * ends the message. In a hunk with n parents each line starts with n marker columns: a `-` in any column
 * means the line is not in the result; all `+` means it is in no parent, so it is what this commit adds and
 * is scanned; a mix of ` ` and `+` came from a parent (scanned where that parent added it, or already
 * known). With one parent this is the ordinary unified diff.
 */
export class LogScanner {
  readonly findings: SecretFinding[] = [];
  readonly unshown: UnshownBlob[] = [];
  readonly archives: UnshownBlob[] = [];
  private readonly archiveBlobs = new Set<string>();
  /** Every commit the log showed. */
  readonly commits = new Set<string>();
  private rest = "";
  private state = State.Diff;
  private commit: string | undefined;
  private file = "";
  private blob = "";
  private line = 0;
  private parents = 1;
  private header = "";

  /**
   * `patterns` are looked for, plain and decoded, in what a commit adds, its message, its headers (names and emails
   * included) and the names of the files it touches.
   */
  constructor(private readonly patterns: readonly SecretPattern[] = SECRET_PATTERNS) {}

  /** Reads every whole line of `chunk` (the tail waits for the next chunk). */
  write(chunk: string): void {
    const text = this.rest + chunk;
    let from = 0;
    for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", from)) {
      this.onLine(text.slice(from, nl));
      from = nl + 1;
    }
    this.rest = text.slice(from);
  }

  end(): LogScan {
    if (this.rest) this.onLine(this.rest);
    this.rest = "";
    return { findings: this.findings, unshown: this.unshown, archives: this.archives };
  }

  private archive(): void {
    if (!this.blob || this.archiveBlobs.has(this.blob)) return;
    this.archiveBlobs.add(this.blob);
    this.archives.push({ ...(this.commit ? { commit: this.commit } : {}), file: this.file, blob: this.blob });
  }

  private found(p: SecretPattern, file: string, line: number): void {
    this.findings.push({ file, line, pattern: p.id, description: p.description, ...(this.commit ? { commit: this.commit } : {}) });
  }

  private onLine(raw: string): void {
    switch (this.state) {
      case State.Hunk: {
        const c0 = raw.charCodeAt(0);
        const n = this.parents;
        // Fast path for the common one-parent case.
        if (n === 1) {
          if (c0 === 43 /* + */) {
            if (this.line === 1 && ARCHIVE_MAGIC.test(raw.slice(1))) this.archive();
            const f = firstMatch(raw, 1, this.patterns);
            if (f) this.found(f, this.file, this.line);
            this.line++;
            return;
          }
          if (c0 === 45 /* - */ || c0 === 92 /* \ */) return;
          if (c0 === 32 /* space */) {
            this.line++;
            return;
          }
        } else if (raw.length >= n && /^[ +-]+$/.test(raw.slice(0, n))) {
          const cols = raw.slice(0, n);
          if (!cols.includes("-")) {
            if (!cols.includes(" ")) {
              if (this.line === 1 && ARCHIVE_MAGIC.test(raw.slice(n))) this.archive();
              const f = firstMatch(raw, n, this.patterns);
              if (f) this.found(f, this.file, this.line);
            }
            this.line++;
          }
          return;
        } else if (c0 === 92) return;
        this.state = State.Diff;
        return this.onDiff(raw);
      }
      case State.Header: {
        if (raw === "") {
          this.state = State.Message;
          this.line = 1;
          return;
        }
        // A continuation line (a signature, a mergetag's embedded tag) belongs to the header before it.
        if (raw.charCodeAt(0) !== 32) this.header = raw.slice(0, raw.indexOf(" ") >>> 0);
        if (ID_HEADERS.has(this.header)) return;
        // Everything else (author and committer names and emails included) is the sandbox's text.
        const f = firstMatch(raw, 0, this.patterns);
        if (f) this.found(f, COMMIT_HEADER, 0);
        return;
      }
      case State.Message: {
        if (raw.startsWith("    ")) {
          const f = firstMatch(raw, 4, this.patterns);
          if (f) this.found(f, COMMIT_MESSAGE, this.line);
          this.line++;
          return;
        }
        this.state = State.Diff;
        return this.onDiff(raw);
      }
      case State.Diff:
        return this.onDiff(raw);
    }
  }

  private onDiff(raw: string): void {
    const c = COMMIT.exec(raw);
    if (c) {
      this.commit = c[1];
      this.commits.add(c[1]!);
      this.file = "";
      this.header = "";
      this.state = State.Header;
      return;
    }
    if (raw.startsWith("diff --git ") || raw.startsWith("diff --cc ") || raw.startsWith("diff --combined ")) {
      // A file's name is what the sandbox chose too: read as it is, not as git quotes it (a quote, a backslash, a
      // control or a non-ASCII byte), which would hide a value with one of those in it.
      const rest = raw.slice(raw.indexOf(" ", 5) + 1);
      const names = raw.startsWith("diff --git ") ? gitPair(rest) : [unquote(rest)];
      const a = firstMatch(raw, 0, this.patterns) ?? names.reduce<SecretPattern | undefined>((f, n) => f ?? firstMatch(n, 0, this.patterns), undefined);
      if (a) this.found(a, "file name", 0);
      this.file = raw.startsWith("diff --git ") ? "" : names[0]!;
      this.blob = "";
      return;
    }
    if (raw.startsWith("index ")) {
      // `index a..b mode` or, combined, `index a,b..r`: the result blob follows the "..".
      const m = /\.\.([0-9a-f]{40,64})/.exec(raw);
      this.blob = m && !ZERO.test(m[1]!) ? m[1]! : "";
      return;
    }
    if (raw.startsWith("+++ ")) {
      const p = raw.slice(4);
      this.file = p === "/dev/null" ? "" : unquote(p).replace(/^b\//, "");
      if (ARCHIVE_NAME.test(this.file)) this.archive();
      return;
    }
    if (raw.startsWith("Binary files ") && raw.endsWith(" differ")) {
      // Only combined diffs print this with -a; the result is new to every parent, so scan it whole.
      if (this.blob) this.unshown.push({ ...(this.commit ? { commit: this.commit } : {}), file: this.file, blob: this.blob });
      return;
    }
    const h = HUNK.exec(raw);
    if (h) {
      this.state = State.Hunk;
      this.parents = h[1]!.length - 1;
      this.line = Number(h[2]);
    }
  }
}

/** Reads a whole `git log -p --cc --pretty=raw` output at once. */
export function scanLog(text: string, patterns: readonly SecretPattern[] = SECRET_PATTERNS): LogScan {
  const s = new LogScanner(patterns);
  s.write(text);
  return s.end();
}

/** Scans a whole blob that a combined diff did not show, as lines of `file` in `commit`. */
export function scanUnshown(u: UnshownBlob, content: string, patterns: readonly SecretPattern[] = SECRET_PATTERNS): SecretFinding[] {
  return scanText(content, u.file, patterns).map((f) => ({ ...f, ...(u.commit ? { commit: u.commit } : {}) }));
}

/** An annotated tag object, as `git cat-file tag` prints it. */
export interface TagObject {
  /** The object it points at, and that object's type (a tag may point at another tag). */
  object: string;
  type: string;
  name: string;
}

/**
 * Reads one tag object: its target and name, and findings in its message (and any header but the
 * tagger's), reported as `tag message` of this tag object.
 */
export function scanTag(sha: string, content: string, patterns: readonly SecretPattern[] = SECRET_PATTERNS): { tag: TagObject; findings: SecretFinding[] } {
  const tag: TagObject = { object: "", type: "", name: "" };
  const findings: SecretFinding[] = [];
  const lines = content.split("\n");
  let i = 0;
  let header = "";
  for (; i < lines.length && lines[i] !== ""; i++) {
    const raw = lines[i]!;
    if (raw.charCodeAt(0) !== 32) header = raw.slice(0, raw.indexOf(" ") >>> 0);
    const value = raw.slice(header.length + 1);
    if (header === "object" && !tag.object) tag.object = value;
    else if (header === "type" && !tag.type) tag.type = value;
    else if (header === "tag" && !tag.name) tag.name = value;
    if (ID_HEADERS.has(header)) continue;
    const f = firstMatch(raw, 0, patterns);
    if (f) findings.push({ file: TAG_MESSAGE, line: 0, pattern: f.id, description: f.description, commit: sha });
  }
  const message = lines.slice(i + 1);
  message.forEach((raw, k) => {
    const f = firstMatch(raw, 0, patterns);
    if (f) findings.push({ file: TAG_MESSAGE, line: k + 1, pattern: f.id, description: f.description, commit: sha });
  });
  return { tag, findings };
}

/**
 * One line per finding, for refusals: `path:line: GitHub token (commit abc1234)`, `commit message:2: … (commit …)`,
 * `commit header: … (commit …)`, `tag message:1: … (tag object …)`.
 */
export function formatGateFindings(fs: readonly SecretFinding[]): string {
  return fs
    .map((f) => {
      if (f.file === TAG_MESSAGE) return `${f.file}${f.line ? `:${f.line}` : ""}: ${f.description}${f.commit ? ` (tag object ${f.commit.slice(0, 12)})` : ""}`;
      if (f.file === COMMIT_HEADER) return `${f.file}: ${f.description}${f.commit ? ` (commit ${f.commit.slice(0, 12)})` : ""}`;
      // A file's name as it is (the scan reads it unquoted), its controls shown rather than sent to a terminal.
      return formatFindings([{ ...f, file: printable(f.file) }]);
    })
    .join("\n");
}

/** The first pattern the text (from `from`) or one of its decodings matches, as the finding will name it. */
function firstMatch(raw: string, from: number, patterns: readonly SecretPattern[]): SecretPattern | undefined {
  return patterns.length === 0 ? undefined : scanLine(from ? raw.slice(from) : raw, patterns);
}

/** What a C-style escape (git's quote_c_style) stands for, besides octal bytes. */
const C_ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, "\\": 92 };

/**
 * A path as git prints it, read back: git quotes one with a quote, a backslash, a control or a non-ASCII byte as a C
 * string ("b/a\"b\303\274"), whose octal escapes are bytes (UTF-8 for a non-ASCII name). Anything else is as it is.
 */
export function unquote(p: string): string {
  return p.startsWith('"') ? unquoteAt(p, 0).name : p;
}

/** The C-quoted string starting at `from` (its opening quote) and the index after its closing quote. */
function unquoteAt(p: string, from: number): { name: string; end: number } {
  const enc = new TextEncoder();
  const bytes: number[] = [];
  let i = from + 1;
  while (i < p.length && p[i] !== '"') {
    if (p[i] === "\\") {
      const o = /^[0-3][0-7]{2}/.exec(p.slice(i + 1, i + 4));
      const e = p[i + 1] ?? "";
      if (o) bytes.push(parseInt(o[0], 8));
      else if (e in C_ESCAPES) bytes.push(C_ESCAPES[e]!);
      else bytes.push(92);
      i += o ? 4 : e in C_ESCAPES ? 2 : 1;
      continue;
    }
    // A character git left as it is: its UTF-8 bytes.
    const ch = String.fromCodePoint(p.codePointAt(i)!);
    bytes.push(...enc.encode(ch));
    i += ch.length;
  }
  return { name: new TextDecoder().decode(new Uint8Array(bytes)), end: i + 1 };
}

/**
 * The names of a `diff --git` line (after "diff --git ") that git quoted, read back; none when it quoted none (the line
 * holds them as they are). Without renames both sides name the same path, so git quotes both or neither. Pure.
 */
function gitPair(rest: string): string[] {
  if (!rest.startsWith('"')) return [];
  const a = unquoteAt(rest, 0);
  return [a.name, unquote(rest.slice(a.end + 1))];
}
