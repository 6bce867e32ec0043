// A config file that holds a key (chat.json, approvals.json): written atomically 0600 in a 0700 dir, refused when others can read it, removed with any temp file a crashed write left.
import { chmodSync, closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { SbxError } from "../core/errors";

/** Writes `text` to `<dir>/<name>` atomically, mode 0600, in a 0700 directory; returns the path. */
export function writePrivateFile(dir: string, name: string, text: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, name);
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  try {
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw e;
  }
  return file;
}

/**
 * The file's text, or null when there is none. One others can read is refused: it holds `what` (say "the bot's API
 * key"), and the hint says how to fix it.
 */
export function readPrivateFile(file: string, what: string): string | null {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
  if ((statSync(file).mode & 0o077) !== 0) {
    throw new SbxError("permission", `${file} is readable by other users and holds ${what}`, {
      hint: `Run \`chmod 600 ${file}\`, and consider rotating ${what}.`,
    });
  }
  return text;
}

/** Removes `<dir>/<name>` and every `<name>.<pid>.tmp` a crashed write left; whether anything was there. */
export function removePrivateFile(dir: string, name: string, what: string): boolean {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw e;
  }
  const leftover = new RegExp(`^${name.replace(/\./g, "\\.")}\\.\\d+\\.tmp$`);
  let removed = false;
  for (const n of names.filter((x) => x === name || leftover.test(x))) {
    const path = join(dir, n);
    try {
      unlinkSync(path);
      removed = true;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT") continue;
      throw new SbxError("permission", `cannot remove ${path}: ${code ?? (e as Error).message}`, {
        hint: `It holds ${what}: remove it yourself (\`rm ${path}\`), after checking who owns ${dir}.`,
      });
    }
  }
  return removed;
}
