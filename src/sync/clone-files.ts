// Reads the sandbox-writable clone as plain files (never with git, never following a symlink): its branches and its alternates.
import { lstatSync, readdirSync, readFileSync, type Stats } from "node:fs";
import { join } from "node:path";

const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const MAX_REF_FILE = 4096;
const MAX_PACKED_REFS = 64 * 1024 * 1024;
const MAX_DEPTH = 32;
const MAX_REFS = 100_000;

/**
 * A subset of `git check-ref-format` strict enough for names read from an untrusted directory: components non-empty,
 * not starting with `.`, not ending with `.lock`; no `..`, `@{`, control characters, space or `~^:?*[\`.
 */
export function isValidRefName(name: string): boolean {
  if (name.length === 0 || name.length > 1024 || name.endsWith("/") || name.endsWith(".")) return false;
  if (name.includes("..") || name.includes("@{") || name === "@") return false;
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return false;
  return name.split("/").every((c) => c.length > 0 && !c.startsWith(".") && !c.endsWith(".lock"));
}

export function isOid(s: string): boolean {
  return OID.test(s);
}

export interface CloneRefs {
  /** refs/heads/* → object id, or `ref: <target>` for a symbolic ref. */
  refs: Map<string, string>;
  /** Things that were skipped and why (a symlink, a bad name, a bad value); the snapshot is still usable. */
  skipped: string[];
  /** Set when the refs could not be read as files at all (then the caller must treat refs as changed). */
  unreadable?: string;
}

function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

/** The clone's `.git`, required to be a real directory: a symlink or a `gitdir:` file would point the host elsewhere. */
export function cloneGitDir(clonePath: string): { dir: string } | { problem: string } {
  const dir = join(clonePath, ".git");
  const st = lstatOrNull(dir);
  if (st === null) return { problem: `${dir} does not exist` };
  if (st.isSymbolicLink()) return { problem: `${dir} is a symlink` };
  if (!st.isDirectory()) return { problem: `${dir} is not a directory` };
  return { dir };
}

function readSmallRegular(path: string, max: number): string | { problem: string } {
  const st = lstatOrNull(path);
  if (st === null) return { problem: "missing" };
  if (st.isSymbolicLink()) return { problem: "is a symlink" };
  if (!st.isFile()) return { problem: "is not a regular file" };
  if (st.size > max) return { problem: `is ${st.size} bytes` };
  return readFileSync(path, "utf8");
}

function refValue(raw: string): string | null {
  const v = raw.trim();
  if (isOid(v)) return v;
  if (v.startsWith("ref: ")) {
    const target = v.slice(5).trim();
    if (isValidRefName(target) && target.startsWith("refs/")) return `ref: ${target}`;
  }
  return null;
}

/** Parses `packed-refs`: `<oid> <refname>` lines, `^<oid>` peeled lines and a `#` header. Only names under `prefix`. */
export function parsePackedRefs(text: string, prefix: string, skipped: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#") || line.startsWith("^")) continue;
    const i = line.indexOf(" ");
    const oid = i < 0 ? "" : line.slice(0, i);
    const name = i < 0 ? "" : line.slice(i + 1);
    if (!isOid(oid) || !isValidRefName(name)) {
      skipped.push(`packed-refs: bad line ${JSON.stringify(line.slice(0, 120))}`);
      continue;
    }
    if (name.startsWith(prefix) && out.size < MAX_REFS) out.set(name, oid);
  }
  return out;
}

/**
 * The clone's branches, read as files: `packed-refs` then loose files under `.git/refs/heads` (loose wins, as in git).
 * Symlinks are never followed, `*.lock` files (a ref being written) are ignored, names and values are validated.
 * A reftable repo has no such files: reported as unreadable.
 */
export function readCloneBranches(clonePath: string): CloneRefs {
  const skipped: string[] = [];
  const git = cloneGitDir(clonePath);
  if ("problem" in git) return { refs: new Map(), skipped, unreadable: git.problem };
  if (lstatOrNull(join(git.dir, "reftable")) !== null) {
    return { refs: new Map(), skipped, unreadable: "the clone uses the reftable ref format" };
  }
  let refs = new Map<string, string>();
  const packed = readSmallRegular(join(git.dir, "packed-refs"), MAX_PACKED_REFS);
  if (typeof packed === "string") refs = parsePackedRefs(packed, "refs/heads/", skipped);
  else if (packed.problem !== "missing") skipped.push(`packed-refs ${packed.problem}`);

  const refsDir = join(git.dir, "refs");
  const st = lstatOrNull(refsDir);
  if (st === null || st.isSymbolicLink() || !st.isDirectory()) {
    return { refs, skipped, unreadable: `${refsDir} is ${st === null ? "missing" : "not a plain directory"}` };
  }
  const walk = (dir: string, name: string, depth: number) => {
    if (depth > MAX_DEPTH) return void skipped.push(`${name}: too deep`);
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (e) {
      // A directory removed between the listing and the read (git prunes empty ref dirs): nothing to read there.
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return;
      throw e;
    }
    for (const ent of entries) {
      const child = `${name}/${ent.name}`;
      const path = join(dir, ent.name);
      if (ent.isSymbolicLink()) {
        skipped.push(`${child}: symlink, not followed`);
      } else if (ent.isDirectory()) {
        walk(path, child, depth + 1);
      } else if (ent.isFile()) {
        if (ent.name.endsWith(".lock")) continue;
        if (!isValidRefName(child)) {
          skipped.push(`${child}: invalid ref name`);
          continue;
        }
        const raw = readSmallRegular(path, MAX_REF_FILE);
        if (typeof raw !== "string") {
          if (raw.problem !== "missing") skipped.push(`${child} ${raw.problem}`);
          continue;
        }
        const v = refValue(raw);
        if (v === null) skipped.push(`${child}: not an object id or symbolic ref`);
        else if (refs.size < MAX_REFS || refs.has(child)) refs.set(child, v);
      }
    }
  };
  const heads = join(refsDir, "heads");
  const hst = lstatOrNull(heads);
  if (hst !== null) {
    if (hst.isSymbolicLink() || !hst.isDirectory()) return { refs, skipped, unreadable: `${heads} is not a plain directory` };
    walk(heads, "refs/heads", 0);
  }
  return { refs, skipped };
}

export type AlternatesCheck = { ok: true } | { ok: false; reason: string };

/** Normalises alternates text for comparison: lines trimmed, blank lines dropped. */
function alternatesLines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

/**
 * Whether `<clone>/.git/objects/info/alternates` still says exactly what sbx wrote. Anything else (another path, an
 * extra line, a symlink, `objects` or `info` replaced by a symlink) would make the host's upload-pack read objects
 * from wherever the sandbox chose.
 */
export function checkAlternates(clonePath: string, expected: string): AlternatesCheck {
  const git = cloneGitDir(clonePath);
  if ("problem" in git) return { ok: false, reason: git.problem };
  for (const sub of ["objects", "objects/info"]) {
    const st = lstatOrNull(join(git.dir, sub));
    if (st === null || st.isSymbolicLink() || !st.isDirectory()) {
      return { ok: false, reason: `${join(git.dir, sub)} is ${st === null ? "missing" : "not a plain directory"}` };
    }
  }
  const path = join(git.dir, "objects", "info", "alternates");
  const text = readSmallRegular(path, 64 * 1024);
  if (typeof text !== "string") return { ok: false, reason: `${path} ${text.problem}` };
  const got = alternatesLines(text);
  const want = alternatesLines(expected);
  if (got.length === want.length && got.every((l, i) => l === want[i])) return { ok: true };
  return {
    ok: false,
    reason: `${path} was rewritten: it says ${JSON.stringify(got.join("\n").slice(0, 300))}, sbx wrote ${JSON.stringify(want.join("\n"))}`,
  };
}

/** Stable text form of a snapshot, for comparing two of them. */
export function snapshotKey(refs: Map<string, string>): string {
  return [...refs.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${v} ${k}`)
    .join("\n");
}
