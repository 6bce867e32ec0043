// The push gate's secret scan: `git log -p --cc -a -U0 --pretty=raw` read as it streams (every line a pushed commit adds, merges included, and every commit message), and annotated tags' messages.
import { SECRET_PATTERNS, formatFindings, scanLine, scanText, type SecretFinding, type SecretPattern } from "../core/secrets";
import { printable } from "../core/printable";
import { SCAN_MAX_BLOBS, SCAN_MAX_FINDINGS, SCAN_MAX_PATHS, SCAN_OVERLAP, SCAN_WINDOW } from "../core/bounds";
import { isGzip, isZip, unpackArchive } from "../core/archive";
import { diffGitPath, gitPair, unquote } from "./diff-names";

export { unquote } from "./diff-names";

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
  /** At most SCAN_MAX_FINDINGS; `more` says how many others there were. */
  findings: SecretFinding[];
  more: number;
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

/** A base64 (or base64url, or hex) run's character: A-Z a-z 0-9 + / _ -. */
function isRunChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 43 || c === 47 || c === 95 || c === 45;
}

/** Where a long line's later windows report a finding: its file and line, and whether it has one already. */
interface ScanTarget {
  file: string;
  line: number;
  found: boolean;
  /** Where in the line its scan begins (after a hunk's markers, a message's indent). */
  from: number;
}

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
  /** Findings past SCAN_MAX_FINDINGS: counted only. */
  more = 0;
  readonly unshown: UnshownBlob[] = [];
  readonly archives: UnshownBlob[] = [];
  private readonly archiveBlobs = new Set<string>();
  /** The commits the log showed, of those asked about (`watch`); every commit when none were named. */
  readonly commits = new Set<string>();
  /**
   * Of the ids asked about (`reach`), those the log showed as a commit or as a commit's parent: each is in the history of
   * a pushed tip (with one tip pushed: an ancestor of it, or it). Parents are taken as git itself takes them, the
   * `parent` headers right after `tree` only; a `parent` header anywhere else is the sandbox's text, which git prints
   * but never follows.
   */
  readonly reached = new Set<string>();
  /** Where a commit's headers are for its parents: 1 before the first header, 2 after `tree` and `parent`s only, 0 past them. */
  private parentsAt = 0;
  /** The current commit's parents, as git takes them (see `reached`). */
  private parentCount = 0;
  /**
   * Every path the log's diffs touch (each `diff --git` header names one; without renames a file's both sides are one
   * path), at most SCAN_MAX_PATHS; null once the log cannot say them all: a merge (its combined diff leaves out a path
   * whose every hunk one parent has), a header longer than a window or of another shape, or more paths than the bound.
   */
  paths: Set<string> | null = new Set();
  /** The line being read: its text so far, never more than a window (SCAN_WINDOW characters). */
  private parts: string[] = [];
  private partsLength = 0;
  /** A line longer than a window, under way: where its windows' findings go, and the end of the last window. */
  private long: { target: ScanTarget | null; binary: boolean; carry: string; at: number; run: number } | null = null;
  /** Reading the first window of a long line: where `scanAt` says its findings go (its file and line). */
  private partial = false;
  private captured: ScanTarget | null = null;
  private binaryPending = false;
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
  constructor(
    private readonly patterns: readonly SecretPattern[] = SECRET_PATTERNS,
    private readonly watch?: ReadonlySet<string>,
    private readonly reach?: ReadonlySet<string>,
  ) {}

  /** Characters of the current line held now (at most a window and a chunk). */
  get heldChars(): number {
    return this.partsLength + (this.long?.carry.length ?? 0);
  }

  /**
   * Reads every whole line of `chunk`; a line's tail waits for the next chunk, and a line longer than a window is read
   * a window at a time as it comes (never held whole).
   */
  write(chunk: string): void {
    let from = 0;
    for (let nl = chunk.indexOf("\n"); nl !== -1; nl = chunk.indexOf("\n", from)) {
      this.add(chunk.slice(from, nl));
      this.lineEnd();
      from = nl + 1;
    }
    if (from < chunk.length) this.add(from === 0 ? chunk : chunk.slice(from));
  }

  end(): LogScan {
    if (this.partsLength > 0 || this.long !== null) this.lineEnd();
    return { findings: this.findings, more: this.more, unshown: this.unshown, archives: this.archives };
  }

  /** More of the current line; each whole window of it is read now. */
  private add(s: string): void {
    if (s.length === 0) return;
    this.parts.push(s);
    this.partsLength += s.length;
    // The first window is a whole window; each after it is the end of the one before (SCAN_OVERLAP characters, or up to
    // 3 more: see `window`) and new characters up to a window, so a secret (or its encoding) up to SCAN_OVERLAP long
    // is whole in one window.
    for (;;) {
      const size = this.long === null ? SCAN_WINDOW : SCAN_WINDOW - this.long.carry.length;
      if (this.partsLength < size) return;
      const text = this.parts.length === 1 ? this.parts[0]! : this.parts.join("");
      const rest = text.slice(size);
      this.parts = rest.length > 0 ? [rest] : [];
      this.partsLength = rest.length;
      this.window(text.slice(0, size));
    }
  }

  /**
   * One window of a long line: the first is read as a line is (its start says what it is); the rest are scanned. The
   * next window starts where a base64 run that crosses into it started, modulo 4 (so a run of many MiB decodes in every
   * window as it would whole; hex, modulo 2, with it when the run is hex).
   */
  private window(w: string): void {
    if (this.long === null) {
      this.partial = true;
      this.captured = null;
      this.binaryPending = false;
      try {
        this.onLine(w);
      } finally {
        this.partial = false;
      }
      // (set by scanAt inside onLine: TypeScript cannot see that)
      const target = this.captured as ScanTarget | null;
      this.long = { target, binary: this.binaryPending, carry: "", at: 0, run: target?.from ?? 0 };
      this.carryOn(w, 0);
      return;
    }
    const text = this.long.carry + w;
    this.scanWindow(text);
    this.carryOn(text, this.long.at);
  }

  /** Keeps the end of `text` (which starts at `at` in the line) for the next window, aligned with the run it is in. */
  private carryOn(text: string, at: number): void {
    const long = this.long!;
    // (Walked back by hand: /[…]*$/ would try every start, quadratic in a window.)
    let tail = text.length;
    while (tail > 0 && isRunChar(text.charCodeAt(tail - 1))) tail--;
    // A run that fills the whole window goes on from an earlier one (or, in the first, from where its scan began: after
    // a hunk's `+`); otherwise it starts here.
    if (at + tail > long.run) long.run = at + tail;
    const end = at + text.length;
    let from = Math.max(at, end - SCAN_OVERLAP);
    if (long.run < from) from -= (from - long.run) % 4;
    long.carry = text.slice(from - at);
    long.at = from;
  }

  /** The current line ended. */
  private lineEnd(): void {
    const rest = this.parts.length === 1 ? this.parts[0]! : this.parts.join("");
    this.parts = [];
    this.partsLength = 0;
    const long = this.long;
    if (long === null) return this.onLine(rest);
    const text = long.carry + rest;
    this.scanWindow(text);
    if (long.binary && text.endsWith(" differ")) this.binaryFiles();
    this.long = null;
  }

  /** A later window of a long line, for the line's target (none: its first window said it is not scanned, or has a finding). */
  private scanWindow(text: string): void {
    const t = this.long?.target;
    if (!t || t.found) return;
    const f = firstMatch(text, 0, this.patterns);
    if (f) {
      t.found = true;
      this.found(f, t.file, t.line);
    }
  }

  /** Scans `raw` from `from` as `file`:`line`; in a long line's first window, also says where its later windows' findings go. */
  private scanAt(raw: string, from: number, file: string, line: number): void {
    const f = firstMatch(raw, from, this.patterns);
    if (f) this.found(f, file, line);
    if (this.partial) this.captured = { file, line, found: f !== undefined, from };
  }

  private binaryFiles(): void {
    // Only combined diffs print this with -a; the result is new to every parent, so scan it whole.
    if (this.blob) this.unshown.push({ ...(this.commit ? { commit: this.commit } : {}), file: this.file, blob: this.blob });
  }

  private archive(): void {
    if (!this.blob || this.archiveBlobs.has(this.blob)) return;
    // Only to skip repeats: past the bound a repeat is named again (and counted against SCAN_MAX_BLOBS by the reader).
    if (this.archiveBlobs.size < 4 * SCAN_MAX_BLOBS) this.archiveBlobs.add(this.blob);
    this.archives.push({ ...(this.commit ? { commit: this.commit } : {}), file: this.file, blob: this.blob });
  }

  private found(p: SecretPattern, file: string, line: number): void {
    if (this.findings.length >= SCAN_MAX_FINDINGS) {
      this.more++;
      return;
    }
    this.findings.push({ file: file.length > 4096 ? `${file.slice(0, 4096)}…` : file, line, pattern: p.id, description: p.description, ...(this.commit ? { commit: this.commit } : {}) });
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
            this.scanAt(raw, 1, this.file, this.line);
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
              this.scanAt(raw, n, this.file, this.line);
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
        if (raw.charCodeAt(0) !== 32) {
          this.header = raw.slice(0, raw.indexOf(" ") >>> 0);
          // git's parents: `tree` first, then the `parent` lines that follow it at once (parse_commit_buffer).
          if (this.parentsAt === 1) this.parentsAt = this.header === "tree" ? 2 : 0;
          else if (this.parentsAt === 2 && this.header !== "parent") this.parentsAt = 0;
          else if (this.parentsAt === 2) {
            if (++this.parentCount > 1) this.paths = null;
            if (this.reach?.has(raw.slice(7))) this.reached.add(raw.slice(7));
          }
        } else this.parentsAt = 0;
        if (ID_HEADERS.has(this.header)) return;
        // Everything else (author and committer names and emails included) is the sandbox's text.
        this.scanAt(raw, 0, COMMIT_HEADER, 0);
        return;
      }
      case State.Message: {
        if (raw.startsWith("    ")) {
          this.scanAt(raw, 4, COMMIT_MESSAGE, this.line);
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
      if (this.watch === undefined || this.watch.has(c[1]!)) this.commits.add(c[1]!);
      if (this.reach?.has(c[1]!)) this.reached.add(c[1]!);
      this.file = "";
      this.header = "";
      this.parentsAt = 1;
      this.parentCount = 0;
      this.state = State.Header;
      return;
    }
    if (raw.startsWith("diff --git ") || raw.startsWith("diff --cc ") || raw.startsWith("diff --combined ")) {
      // A file's name is what the sandbox chose too: read as it is, and also as git quotes it (a quote, a backslash, a
      // control or a non-ASCII byte would hide a value with one of those in it).
      const rest = raw.slice(raw.indexOf(" ", 5) + 1);
      const names = raw.startsWith("diff --git ") ? gitPair(rest) : [unquote(rest)];
      const unquoted = firstMatch(raw, 0, this.patterns) === undefined ? names.reduce<SecretPattern | undefined>((f, n) => f ?? firstMatch(n, 0, this.patterns), undefined) : undefined;
      this.scanAt(raw, 0, "file name", 0);
      if (unquoted) this.found(unquoted, "file name", 0);
      if (this.paths !== null) {
        const path = this.partial || !raw.startsWith("diff --git ") ? undefined : diffGitPath(rest);
        if (path === undefined || (this.paths.size >= SCAN_MAX_PATHS && !this.paths.has(path))) this.paths = null;
        else this.paths.add(path);
      }
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
    if (raw.startsWith("Binary files ")) {
      // A long one's end is read with its last window.
      if (this.partial) this.binaryPending = true;
      else if (raw.endsWith(" differ")) this.binaryFiles();
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

/** A blob the log named for reading whole (`whole`: a combined diff did not show it) or unpacking (an archive). */
export interface NamedBlob {
  u: UnshownBlob;
  whole: boolean;
}

/** What a push's scan found, at the end. */
export interface ScanDone {
  findings: SecretFinding[];
  more: number;
  /** The pushed tips (`watch`) the log showed as commits. */
  commits: string[];
  /** The ids of `reach` the log showed as a commit or a commit's parent (LogScanner.reached). */
  reached: string[];
  /** The paths the log's diffs touch, or null when it cannot say them all (LogScanner.paths). */
  paths: string[] | null;
}

/**
 * One push's scan, fed as the gate's log streams: its lines (LogScanner), then the blobs it names, then the end. Run on
 * the scan's thread (scan-worker.ts), or on the caller's for a log small enough to read at once (gate-scan.ts).
 */
export class ScanSession {
  private readonly scanner: LogScanner;
  private readonly extra: SecretFinding[] = [];
  private extraMore = 0;
  private readonly dec = new TextDecoder();
  private ended: LogScan | null = null;

  constructor(
    private readonly patterns: readonly SecretPattern[],
    watch: Iterable<string>,
    reach: Iterable<string> = [],
  ) {
    this.scanner = new LogScanner(patterns, new Set(watch), new Set(reach));
  }

  /** Reads a chunk of the log; returns the blobs it named so far (each named once). */
  log(bytes: Uint8Array): NamedBlob[] {
    this.scanner.write(this.dec.decode(bytes, { stream: true }));
    return this.named();
  }

  /** Scans a blob the log named: an archive's members, or (whole) a file a combined diff did not show. */
  blob(u: UnshownBlob, whole: boolean, bytes: Uint8Array): void {
    const found = isGzip(bytes) || isZip(bytes) ? scanArchive(u, bytes, this.patterns) : whole ? scanUnshown(u, latin1(bytes), this.patterns) : [];
    for (const f of found) {
      if (this.extra.length < SCAN_MAX_FINDINGS) this.extra.push(f);
      else this.extraMore++;
    }
  }

  /** The log ended: its last line is read; returns what it named. */
  flush(): NamedBlob[] {
    this.scanner.write(this.dec.decode());
    this.ended = this.scanner.end();
    return this.named();
  }

  finish(): ScanDone {
    const r = this.ended ?? this.scanner.end();
    const all = [...r.findings, ...this.extra];
    return {
      findings: all.slice(0, SCAN_MAX_FINDINGS),
      more: r.more + this.extraMore + Math.max(0, all.length - SCAN_MAX_FINDINGS),
      commits: [...this.scanner.commits],
      reached: [...this.scanner.reached],
      paths: this.scanner.paths === null ? null : [...this.scanner.paths],
    };
  }

  private named(): NamedBlob[] {
    const s = this.scanner;
    return [...s.unshown.splice(0).map((u) => ({ u, whole: true })), ...s.archives.splice(0).map((u) => ({ u, whole: false }))];
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

/** Findings in what a gzip or zip blob unpacks to, each named `file!member` (or `file (gzip)`). */
export function scanArchive(u: UnshownBlob, bytes: Uint8Array, patterns: readonly SecretPattern[] = SECRET_PATTERNS): SecretFinding[] {
  const { members } = unpackArchive(bytes);
  return members.flatMap((m) => scanUnshown({ ...u, file: m.member ? `${u.file}!${m.member}` : `${u.file} (gzip)` }, latin1(m.bytes), patterns));
}

/** Bytes as one character each (0-255). */
export function latin1(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1");
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
export function formatGateFindings(fs: readonly SecretFinding[], more = 0): string {
  const lines = fs
    .map((f) => {
      if (f.file === TAG_MESSAGE) return `${f.file}${f.line ? `:${f.line}` : ""}: ${f.description}${f.commit ? ` (tag object ${f.commit.slice(0, 12)})` : ""}`;
      if (f.file === COMMIT_HEADER) return `${f.file}: ${f.description}${f.commit ? ` (commit ${f.commit.slice(0, 12)})` : ""}`;
      // A file's name as it is (the scan reads it unquoted), its controls shown rather than sent to a terminal.
      return formatFindings([{ ...f, file: printable(f.file) }]);
    });
  if (more > 0) lines.push(`… and ${more} more`);
  return lines.join("\n");
}

/** The first pattern the text (from `from`) or one of its decodings matches, as the finding will name it. */
function firstMatch(raw: string, from: number, patterns: readonly SecretPattern[]): SecretPattern | undefined {
  return patterns.length === 0 ? undefined : scanLine(from ? raw.slice(from) : raw, patterns);
}
