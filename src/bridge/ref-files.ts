// The refs of a host-owned repository (the gate, the host repo) read from its files, not by a git process: a push reads
// both before its scan, and on a machine of few cores every process started then delays the push the shim waits for.
import { existsSync, lstatSync, readdirSync, readFileSync, type Dirent } from "node:fs";
import { join } from "node:path";

/** Loose ref files read at most (each a small read on the daemon's one thread); a repository with more is left to git. */
export const REF_FILES_MAX = 500;
/** The largest packed-refs read here (about 3,000 refs); a larger one is left to git. */
export const PACKED_REFS_MAX_BYTES = 256 * 1024;

const SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** What no ref name component holds (git's check_refname_format, the part a file name can break). */
const BAD_COMPONENT = /[\x00-\x20\x7f~^:?*[\\]|\.\.|@\{/;

function goodComponent(c: string): boolean {
  return c.length > 0 && !c.startsWith(".") && !c.endsWith(".lock") && !BAD_COMPONENT.test(c);
}

/**
 * The refs under `prefix` (`refs/` or below, ending in `/`) of a files-backend repository whose git dir is `gitDir`, as
 * `git for-each-ref --format='%(objectname) %(refname)' <prefix>` prints them (a loose ref over a packed one of its
 * name), of those `keep` takes (asked of each dir too, as `<name>/`, so a namespace it refuses is not read). Undefined
 * where git must read them itself: a reftable repository, a packed-refs over PACKED_REFS_MAX_BYTES, more than
 * REF_FILES_MAX loose refs, a file or dir that cannot be read. Symrefs are left out (their targets are refs of their
 * own), and so are names git does not take (a component starting with "." or ending in ".lock": a ref being written).
 * Only for repositories the sandbox cannot write (host-never-reads-the-sandbox).
 */
export function readRefFiles(gitDir: string, prefix: string, keep: (ref: string) => boolean = () => true): string | undefined {
  if (!/^refs\/(?:.+\/)?$/.test(prefix) || existsSync(join(gitDir, "reftable"))) return undefined;
  const refs = new Map<string, string>();
  try {
    const st = lstatSync(join(gitDir, "packed-refs"), { throwIfNoEntry: false });
    if (st) {
      if (!st.isFile() || st.size > PACKED_REFS_MAX_BYTES) return undefined;
      for (const line of readFileSync(join(gitDir, "packed-refs"), "latin1").split("\n")) {
        // "# pack-refs with: …" and "^<peeled>" (what the tag before it points at) name no ref.
        const i = line.indexOf(" ");
        if (i < 0 || line.startsWith("#") || line.startsWith("^")) continue;
        const ref = line.slice(i + 1);
        if (SHA.test(line.slice(0, i)) && ref.startsWith(prefix) && keep(ref)) refs.set(ref, line.slice(0, i));
      }
    }
  } catch {
    return undefined;
  }
  let files = 0;
  const walk = (dir: string, at: string): boolean => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === "ENOENT";
    }
    for (const e of entries) {
      const name = at + e.name;
      if (!goodComponent(e.name)) continue;
      if (e.isDirectory()) {
        if (keep(`${name}/`) && !walk(join(dir, e.name), `${name}/`)) return false;
        continue;
      }
      if (!e.isFile() || !keep(name)) continue;
      if (++files > REF_FILES_MAX) return false;
      let text: string;
      try {
        text = readFileSync(join(dir, e.name), "latin1").trim();
      } catch {
        return false;
      }
      // A loose file stands for its name whatever it holds: a symref or a broken one hides the packed value, as in git.
      if (SHA.test(text)) refs.set(name, text);
      else refs.delete(name);
    }
    return true;
  };
  if (!walk(join(gitDir, prefix), prefix)) return undefined;
  return [...refs].map(([ref, sha]) => `${sha} ${ref}\n`).join("");
}
