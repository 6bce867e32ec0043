// The host repo's uncommitted work, which a new sandbox (a clone of HEAD) does not have: counted for the note a create
// gives, and, with `--with-changes`, carried in as uncommitted changes: tracked changes as a binary patch that the
// sandbox's own git applies, untracked files (not ignored ones) as a tar its own tar unpacks. The host reads only its
// own repo, with the hardened git environment (no external diff, no textconv, no hooks), and never follows a link:
// an untracked link is carried as a link, never as the file it points at (which may be outside the repo).
import { lstatSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { hostGitEnv, HOST_GIT_SAFE } from "../sync/git-argv";
import type { Exec } from "../sys/exec";
import type { TarEntry } from "../core/tar";
import type { CopyIn, Scanned } from "../secrets/copy-in";

export interface WorkingTreeChanges {
  /** `git diff --binary HEAD`: staged and unstaged changes to tracked files, against the commit the clone has. */
  patch: string;
  /** Untracked, not ignored files, as a tar of regular files and links (relative paths), through the copy-in door. */
  untracked: Scanned<Uint8Array> | null;
  /** How many paths differ from HEAD (tracked changes and untracked files). */
  files: number;
  /** What was left out, said to the person (sockets, devices, unreadable files). */
  skipped: string[];
}

/** runs: git -C <repo> status --porcelain=v1 -z --untracked-files=all (how many paths are not in HEAD as they are) */
export async function changedFiles(exec: Exec, repo: string): Promise<number> {
  const r = await exec.run(["git", ...HOST_GIT_SAFE, "-C", repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules"], { env: hostGitEnv(), check: false });
  if (r.exitCode !== 0) return 0;
  // Entries are NUL-separated; a rename or copy carries its source path as one more field.
  const fields = r.stdout.split("\0").filter((f) => f !== "");
  let n = 0;
  for (let i = 0; i < fields.length; i++) {
    n++;
    if (/^[RC]/.test(fields[i]!)) i++;
  }
  return n;
}

/**
 * The patch without the diff of any file whose change holds a secret (copy-in.ts, strict: what the push scan knows):
 * its added lines, its paths, and for a binary change the file as the working tree has it. What was left out is the
 * door's to say.
 */
function scannedPatch(patch: string, repo: string, door: CopyIn): string {
  if (patch === "") return patch;
  const parts = patch.split(/^(?=diff --git )/m);
  return parts
    .filter((part) => {
      const path = /^\+\+\+ b\/(.*)$/m.exec(part)?.[1] ?? /^diff --git a\/.* b\/(.*)$/m.exec(part)?.[1] ?? "";
      const added = part.split("\n").filter((l) => l.startsWith("+") && !l.startsWith("+++")).map((l) => l.slice(1)).join("\n");
      if (door.file(path, new TextEncoder().encode(`${part.split("\n")[0]}\n${added}`), "strict") === null) return false;
      if (/^GIT binary patch$/m.test(part) && path !== "") {
        let bytes: Uint8Array;
        try {
          bytes = lstatSync(join(repo, path)).isFile() ? readFileSync(join(repo, path)) : new Uint8Array();
        } catch {
          bytes = new Uint8Array();
        }
        if (door.file(path, bytes, "strict") === null) return false;
      }
      return true;
    })
    .join("");
}

/**
 * The working tree's files at `names` (relative), as tar entries with their parent dirs first: regular files and links
 * (a link as a link, never followed); what is gone, unreadable or of another kind is said in `skipped`.
 */
function readWorkingFiles(repo: string, names: readonly string[], now: number): { entries: TarEntry[]; skipped: string[] } {
  const entries: TarEntry[] = [];
  const skipped: string[] = [];
  const dirs = new Set<string>();
  for (const name of names) {
    const p = join(repo, name);
    let st;
    try {
      st = lstatSync(p);
    } catch {
      skipped.push(`${name} (gone)`);
      continue;
    }
    // Parent dirs first, so the unpacking tar makes them with ordinary modes.
    const parts = name.split("/").slice(0, -1);
    for (let i = 1; i <= parts.length; i++) {
      const d = parts.slice(0, i).join("/");
      if (!dirs.has(d)) {
        dirs.add(d);
        entries.push({ path: `${d}/`, type: "dir", mode: 0o755, uid: 0, gid: 0, mtime: now });
      }
    }
    if (st.isSymbolicLink()) entries.push({ path: name, type: "symlink", target: readlinkSync(p), mode: 0o777, uid: 0, gid: 0, mtime: now });
    else if (st.isFile()) {
      try {
        entries.push({ path: name, type: "file", mode: st.mode & 0o777, uid: 0, gid: 0, content: readFileSync(p), mtime: now });
      } catch {
        skipped.push(`${name} (unreadable)`);
      }
    } else skipped.push(`${name} (not a file or a link)`);
  }
  return { entries, skipped };
}

/** The working tree against HEAD, file by file: what an image's build context takes with `--with-changes`. */
export interface ChangedFiles {
  /** Changed tracked files and untracked (not ignored) ones, as the working tree has them (paths from the repo's root). */
  present: TarEntry[];
  /** Tracked files the working tree no longer has. */
  gone: string[];
  skipped: string[];
}

/**
 * The working tree's changes as whole files (not a patch: the build context is a tree, not a clone to apply to):
 * tracked files that differ from HEAD (staged or not), untracked files that are not ignored. Ignored files never.
 * runs: git -C <repo> diff --name-status -z --no-renames --ignore-submodules HEAD --;
 *       git -C <repo> ls-files --others --exclude-standard -z
 */
export async function changedWorkingFiles(exec: Exec, repo: string, now: number): Promise<ChangedFiles> {
  const git = (args: string[]) => exec.run(["git", ...HOST_GIT_SAFE, "-C", repo, ...args], { env: hostGitEnv(), replaceEnv: true, check: false });
  const [diff, others] = await Promise.all([
    git(["diff", "--name-status", "-z", "--no-renames", "--no-ext-diff", "--ignore-submodules", "HEAD", "--"]),
    git(["ls-files", "--others", "--exclude-standard", "-z"]),
  ]);
  const fields = diff.exitCode === 0 ? diff.stdout.split("\0") : [];
  const changed: string[] = [];
  const gone: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [status, path] = [fields[i]!, fields[i + 1]!];
    if (path === "") continue;
    if (status.startsWith("D")) gone.push(path);
    else changed.push(path);
  }
  const untracked = others.exitCode === 0 ? others.stdout.split("\0").filter((n) => n !== "") : [];
  const { entries, skipped } = readWorkingFiles(repo, [...changed, ...untracked], now);
  return { present: entries, gone, skipped };
}

/**
 * What of the working tree may be carried in, through the copy-in door `door`: the patch without a file's diff that
 * holds a secret, the untracked files without one that does (strict: a repo's own text is judged as a push is).
 * runs: git -C <repo> diff --binary --no-ext-diff --no-textconv HEAD;
 *       git -C <repo> ls-files --others --exclude-standard -z
 */
export async function workingTreeChanges(exec: Exec, repo: string, now: number, door: CopyIn): Promise<WorkingTreeChanges> {
  const git = (args: string[]) => exec.run(["git", ...HOST_GIT_SAFE, "-C", repo, ...args], { env: hostGitEnv() });
  const patch = scannedPatch((await git(["diff", "--binary", "--no-ext-diff", "--no-textconv", "--no-color", "HEAD", "--"])).stdout, repo, door);
  const names = (await git(["ls-files", "--others", "--exclude-standard", "-z"])).stdout.split("\0").filter((n) => n !== "");
  const { entries, skipped } = readWorkingFiles(repo, names, now);
  const before = door.count;
  const untracked = entries.length ? door.tar(entries, (p) => p, "strict") : null;
  const files = (patch === "" ? 0 : (patch.match(/^diff --git /gm) ?? []).length) + entries.filter((e) => e.type !== "dir").length - (door.count - before);
  return { patch, untracked, files, skipped };
}
