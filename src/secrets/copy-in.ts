// The one door for host content into a sandbox. Every copy-in site (the seeded home and ~/.claude.json, the views
// every overlay shows, agents' first-run files, the environment, --with-changes, in the clone and in an image's build
// context) goes through a CopyIn made for that build, which scans it whole with core/copy-in.ts (every field, every
// encoding) and removes each hit; `findings` says what was removed (file and field, never the value). What crosses is
// typed `Scanned`, and the seams that put things inside (the engine's archive upload, an overlay's lower dir, the agent
// setup's plan, a build context's changes) take only that, so a new site cannot skip the scan without a cast a
// reviewer sees.
import { closeSync, constants, existsSync, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";
import { isGzip, isZip, unpackArchive } from "../core/archive";
import { CopyInScanner, type CopyInFinding, type CopyInTier } from "../core/copy-in";
import { tarArchive, type TarEntry } from "../core/tar";

declare const SCANNED: unique symbol;
/** Something a CopyIn produced: scanned whole, what held a secret removed. */
export type Scanned<T> = T & { readonly [SCANNED]: true };

/** Bounds on one view: overlays are settings and one project's history, not a backup. */
export const VIEW_LIMITS = { bytes: 64 << 20, entries: 20_000, fileBytes: 16 << 20 } as const;

export interface ViewReport {
  /** The view's dir: an overlay's lower dir is only ever one of these. */
  view: Scanned<string>;
  copied: number;
  bytes: number;
  /** What was left out for a reason other than a secret (a link, a special file, over the bounds, not this project's). */
  skipped: string[];
}

/** What to do with one entry of a view (its path relative to the dir the view shows). */
export type ViewPick = "scan" | "as-is" | { out: string };

export interface ViewSelect {
  /** The top-level entries shown (default: all). */
  only?: readonly string[];
  /** Per entry: scanned (the default), copied as it is (the person's explicit choice), or left out with a reason ("": unsaid). */
  pick?: (rel: string, abs: string, isDir: boolean) => ViewPick;
}

export interface CopyInOptions {
  /** The host user's home: files under it are named `~/…`. */
  home: string;
  /** The person chose to expose credentials (`--expose-credentials`): hits are said, and copied anyway. */
  keep?: boolean;
}

/** A file's bytes, read through a descriptor opened without following a link; null when it is not a regular file or too big. */
function readPlain(p: string, max: number): Uint8Array | null {
  let fd: number;
  try {
    fd = openSync(p, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > max) return null;
    const buf = new Uint8Array(st.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n <= 0) break;
      off += n;
    }
    return buf.subarray(0, off);
  } finally {
    closeSync(fd);
  }
}

const dec = new TextDecoder("utf-8", { fatal: false });
/** A host settings file as read: its text, not there, or left unread and why. */
export type SettingsRead = { text: string } | { missing: true } | { refused: string };

export interface SettingsReadRules {
  /** The dir the file is under (the person's home, /etc): its own path may be a link; nothing below it may. */
  root: string;
  /** Whose files are read: the host user's and root's (a file another account owns is another account's settings). */
  owners: readonly number[];
  /** Trees a sandbox writes (the sandbox root, the runtime dir): a file there is never read, whatever the path says. */
  outside: readonly string[];
  /** At most this many bytes (settings, not data). */
  max?: number;
}

/**
 * A host settings file (~/.npmrc, pip.conf, Go's env, cargo's config) read by the door's rules: never through a link
 * (on any part of its path below `root`: a link could lead into a sandbox's tree, whose content the sandbox chose), a
 * regular file of the host user's or root's, outside every sandbox's tree, within bounds, read by descriptor.
 */
export function readSettingsFile(path: string, rules: SettingsReadRules): SettingsRead {
  let base: string;
  try {
    base = realpathSync(rules.root);
  } catch {
    return { missing: true };
  }
  const rel = relative(rules.root, path);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return { refused: `not under ${rules.root}` };
  let at = base;
  for (const part of rel.split(sep)) {
    at = join(at, part);
    let st;
    try {
      st = lstatSync(at);
    } catch {
      return { missing: true };
    }
    // Said only when there is something at the end of it: a tool's other file name under a linked dir is not news.
    if (st.isSymbolicLink()) return existsSync(path) ? { refused: "it is reached through a link (sbx reads settings only from plain files on their own path)" } : { missing: true };
  }
  if (rules.outside.some((o) => at === o || at.startsWith(o.endsWith("/") ? o : `${o}/`))) return { refused: "it is in a sandbox's tree" };
  let fd: number;
  try {
    fd = openSync(at, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return { refused: "it cannot be opened as a plain file" };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { refused: "not a regular file" };
    if (!rules.owners.includes(st.uid)) return { refused: `it belongs to another account (uid ${st.uid})` };
    const max = rules.max ?? 256 << 10;
    if (st.size > max) return { refused: `larger than ${max >> 10} KiB` };
    const buf = new Uint8Array(st.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n <= 0) break;
      off += n;
    }
    return { text: dec.decode(buf.subarray(0, off)) };
  } finally {
    closeSync(fd);
  }
}


const enc = new TextEncoder();

function latin1(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode(...b.subarray(i, i + 8192));
  return s;
}

export class CopyIn {
  private readonly scanner: CopyInScanner;

  /** `hostValues`: the host's secrets by name, read now (llm/keys.ts `hostSecretsByName`). */
  constructor(hostValues: Readonly<Record<string, string>>, private readonly opts: CopyInOptions) {
    this.scanner = new CopyInScanner(hostValues);
  }

  /** What was removed (or, with `keep`, found and copied anyway), in order; at most a few hundred. */
  get findings(): readonly CopyInFinding[] {
    return this.scanner.findings;
  }

  /** How many findings in all. */
  get count(): number {
    return this.scanner.count;
  }

  /** Whether hits are copied anyway (the person exposed credentials). */
  get keeps(): boolean {
    return this.opts.keep === true;
  }

  /** Records what a structural rule elsewhere took out (claude-json.ts's MCP args and URLs). */
  report(f: CopyInFinding): void {
    this.scanner.report(f);
  }

  /** `~/…` for a path under home. */
  show(p: string): string {
    const h = this.opts.home.replace(/\/+$/, "");
    return p === h ? "~" : p.startsWith(`${h}/`) ? `~/${p.slice(h.length + 1)}` : p;
  }

  /** A JSON value sbx builds or reads for a sandbox, with every field that holds a secret removed. */
  json<T>(file: string, v: T, tier: CopyInTier = "config"): Scanned<T> {
    const kept = this.scanner.json(file, v, tier);
    return (this.keeps ? v : kept) as Scanned<T>;
  }

  /** Variables a sandbox gets: a value that holds a host secret or a secret's shape (any encoding) is left out. */
  env(what: string, env: Readonly<Record<string, string>>): Scanned<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(env)) {
      const hit = this.scanner.find(k, "strict") ?? this.scanner.find(v, "strict");
      if (hit === undefined) out[k] = v;
      else {
        this.scanner.report({ file: what, field: k, what: hit });
        if (this.keeps) out[k] = v;
      }
    }
    return out as Scanned<Record<string, string>>;
  }

  /** One setting's value, as `file` and `field` name it: itself when nothing in it hits, else null (the hit said). */
  text(file: string, field: string, v: string, tier: CopyInTier = "config"): string | null {
    const hit = this.scanner.find(v, tier);
    if (hit === undefined) return v;
    this.scanner.report({ file, field, what: hit });
    return this.keeps ? v : null;
  }

  /**
   * A file's bytes as they may go in, or null when the file is left out whole. By its kind: JSON field by field (a
   * hit removed from it); JSON Lines (transcripts) line by line, a hit's text replaced; gzip and zip unpacked within
   * bounds, and left out when anything in them hits or cannot be read; anything else line by line, and left out whole
   * at the first hit (a file's other lines may hold the rest of a key).
   */
  file(file: string, bytes: Uint8Array, tier: CopyInTier = "config"): Uint8Array | null {
    const name = file.split("/").pop() ?? file;
    const before = this.count;
    const inName = this.scanner.find(name, "strict");
    if (inName !== undefined) {
      this.scanner.report({ file, field: "its name", what: inName }); // said up to the name (report)
      return this.keeps ? bytes : null;
    }
    if (isGzip(bytes) || isZip(bytes)) {
      const u = unpackArchive(bytes);
      for (const m of u.members) {
        const hit = this.scanner.findLine(latin1(m.bytes), "strict");
        if (hit) {
          this.scanner.report({ file, field: `${m.member || "its content"}, line ${hit.line}`, what: hit.what });
          return this.keeps ? bytes : null;
        }
      }
      if (u.skipped !== null) {
        this.scanner.report({ file, field: "", what: `an archive sbx cannot read whole (${u.skipped})` });
        return this.keeps ? bytes : null;
      }
      return bytes;
    }
    const text = dec.decode(bytes);
    // Bytes that are not UTF-8 are read as latin1 too: a key in a binary file is still ASCII.
    const raw = text.includes("\uFFFD") ? latin1(bytes) : text;
    if (name.endsWith(".jsonl")) {
      const out = this.scanner.jsonLines(file, text);
      if (this.count === before || this.keeps) return raw === text ? bytes : this.lineScan(file, raw, tier, bytes);
      return enc.encode(out);
    }
    if (name.endsWith(".json") && tier === "config") {
      let v: unknown;
      try {
        v = JSON.parse(text);
      } catch {
        return this.lineScan(file, raw, tier, bytes);
      }
      const kept = this.scanner.json(file, v, tier);
      if (this.count === before || this.keeps) return bytes;
      return enc.encode(`${JSON.stringify(kept, null, 2)}\n`);
    }
    return this.lineScan(file, raw, tier, bytes);
  }

  private lineScan(file: string, text: string, tier: CopyInTier, bytes: Uint8Array): Uint8Array | null {
    const hit = this.scanner.findLine(text, tier);
    if (!hit) return bytes;
    this.scanner.report({ file, field: `line ${hit.line}`, what: hit.what });
    return this.keeps ? bytes : null;
  }

  /**
   * The entries of what goes in, each file's content through `file` (an entry removed whole is left out), each name
   * and link target scanned. `label` names an entry for the report.
   */
  entries(entries: readonly TarEntry[], label: (path: string) => string, tier: CopyInTier = "config"): Scanned<TarEntry[]> {
    const kept: TarEntry[] = [];
    for (const e of entries) {
      const what = this.scanner.find(e.path, "strict") ?? (e.type === "symlink" ? this.scanner.find(e.target ?? "", "strict") : undefined);
      if (what !== undefined) {
        this.scanner.report({ file: label(e.path), field: e.type === "symlink" ? "its name or target" : "its name", what });
        if (!this.keeps) continue;
      }
      if (e.type !== "file") {
        kept.push(e);
        continue;
      }
      const content = this.file(label(e.path), e.content ?? new Uint8Array(), tier);
      if (content !== null) kept.push({ ...e, content });
    }
    return kept as Scanned<TarEntry[]>;
  }

  /** A tar of what goes in (a seeded home, carried changes): `entries` as one archive. */
  tar(entries: readonly TarEntry[], label: (path: string) => string, tier: CopyInTier = "config"): Scanned<Uint8Array> {
    return tarArchive(this.entries(entries, label, tier)) as Scanned<Uint8Array>;
  }

  /**
   * Fills `to` (emptied first) with what of `from` a sandbox may see: regular files and dirs only, never through a
   * link, within VIEW_LIMITS, each file through `file` (so a hit is removed, not copied), each name scanned. A
   * missing `from` gives an empty view. The view's root takes `from`'s mode (an overlay's upper dir takes the view's).
   */
  view(from: string, to: string, select: ViewSelect = {}): Scanned<ViewReport> {
    rmSync(to, { recursive: true, force: true });
    let rootMode = 0o755;
    try {
      const st = lstatSync(from);
      if (st.isDirectory()) rootMode = st.mode & 0o777;
    } catch {
      /* nothing there: an empty view */
    }
    mkdirSync(to, { recursive: true, mode: 0o700 });
    const r: ViewReport = { view: to as Scanned<string>, copied: 0, bytes: 0, skipped: [] };
    const shown = (rel: string) => this.show(join(from, rel));
    const copy = (rel: string, asIs: boolean): void => {
      const abs = join(from, rel);
      let st;
      try {
        st = lstatSync(abs);
      } catch {
        return; // not there: nothing to show
      }
      if (st.isSymbolicLink() || (!st.isFile() && !st.isDirectory())) {
        r.skipped.push(`${shown(rel)}: not a plain file or dir`);
        return;
      }
      const pick: ViewPick = asIs ? "as-is" : (select.pick?.(rel, abs, st.isDirectory()) ?? "scan");
      if (typeof pick === "object") {
        // "" leaves it out unsaid: what was never meant to be shown (another project's dir) is not news.
        if (pick.out !== "") r.skipped.push(`${shown(rel)}: ${pick.out}`);
        return;
      }
      if (r.copied >= VIEW_LIMITS.entries || r.bytes + (st.isFile() ? st.size : 0) > VIEW_LIMITS.bytes || (st.isFile() && st.size > VIEW_LIMITS.fileBytes)) {
        r.skipped.push(`${shown(rel)}: over the view's bounds`);
        return;
      }
      const base = rel.split("/").pop()!;
      const inName = pick === "scan" ? this.scanner.find(base, "strict") : undefined;
      if (inName !== undefined) {
        this.scanner.report({ file: shown(rel), field: "its name", what: inName });
        if (!this.keeps) return;
      }
      const dest = join(to, rel);
      if (st.isDirectory()) {
        r.copied++;
        mkdirSync(dest, { recursive: true, mode: 0o700 });
        let names: string[] = [];
        try {
          names = readdirSync(abs).sort();
        } catch {
          r.skipped.push(`${shown(rel)}: unreadable`);
        }
        for (const n of names) copy(join(rel, n), pick === "as-is");
        chmodTo(dest, st.mode & 0o777);
        return;
      }
      const bytes = readPlain(abs, VIEW_LIMITS.fileBytes);
      if (bytes === null) {
        r.skipped.push(`${shown(rel)}: changed while read, or unreadable`);
        return;
      }
      const out = pick === "as-is" ? bytes : this.file(shown(rel), bytes);
      if (out === null) return;
      r.copied++;
      r.bytes += out.length;
      writeFileSync(dest, out, { mode: st.mode & 0o777, flag: "wx" });
    };
    const top = select.only ?? (() => {
      try {
        return readdirSync(from).sort();
      } catch {
        return [];
      }
    })();
    for (const e of top) copy(e, false);
    chmodTo(to, rootMode);
    return r as Scanned<ViewReport>;
  }
}

/** Sets a mode without following a link (views hold none: sbx made every entry). */
function chmodTo(p: string, mode: number): void {
  const fd = openSync(p, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_DIRECTORY);
  try {
    // Owner rwx kept: sbx itself must be able to empty the view next time.
    fchmodSync(fd, mode | 0o700);
  } finally {
    closeSync(fd);
  }
}

/** One line per finding for the person: `~/.claude.json: mcpServers.github.args[4] (GitHub token)`. */
export function findingLines(fs: readonly CopyInFinding[], count = fs.length, most = 12): string[] {
  const lines = fs.slice(0, most).map((f) => `${f.file}${f.field ? `: ${f.field}` : ""} (${f.what})`);
  if (count > lines.length) lines.push(`and ${count - lines.length} more`);
  return lines;
}
