// The one-daemon-per-user lock: a pid file created exclusively; a live holder makes a second daemon refuse, naming its pid.
import { closeSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { SbxError } from "../core/errors";
import { pidAlive } from "../sys/proc";

export interface DaemonLock {
  readonly path: string;
  readonly pid: number;
  release(): void;
}

function readPid(path: string): number | null {
  try {
    const n = Number.parseInt(readFileSync(path, "utf8").trim(), 10);
    return Number.isFinite(n) ? n : null;
  } catch {
    return null;
  }
}

/**
 * Takes the lock at `path` for `pid`. A file left by a dead process is stale and replaced; a file whose
 * pid is alive means another daemon runs, and this refuses with its pid.
 */
export function acquireLock(path: string, pid = process.pid, alive: (pid: number) => boolean = pidAlive): DaemonLock {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, `${pid}\n`);
      closeSync(fd);
      return {
        path,
        pid,
        release() {
          if (readPid(path) === pid) {
            try {
              unlinkSync(path);
            } catch {
              /* already gone */
            }
          }
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const holder = readPid(path);
    if (holder !== null && holder !== pid && alive(holder)) {
      throw new SbxError("conflict", `another sbx daemon is already running (pid ${holder})`, {
        hint: `Use the running one (\`sbx status\`), or stop it first: \`kill ${holder}\` (lock file ${path}).`,
      });
    }
    if (holder === null) {
      // A writer may be between create and write: give it a moment before calling the file stale.
      Bun.sleepSync(20);
      if (readPid(path) !== null) continue;
    }
    // Stale: move it aside atomically so two starters cannot both delete a fresh lock.
    const aside = `${path}.stale.${pid}`;
    try {
      renameSync(path, aside);
      const moved = readPid(aside);
      if (moved !== null && moved !== holder && alive(moved)) {
        // A live daemon took the lock between our read and the rename: put its file back.
        renameSync(aside, path);
        throw new SbxError("conflict", `another sbx daemon is already running (pid ${moved})`, {
          hint: `Use the running one (\`sbx status\`), or stop it first: \`kill ${moved}\`.`,
        });
      }
      unlinkSync(aside);
    } catch (e) {
      if (e instanceof SbxError) throw e;
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
  }
  throw new SbxError("conflict", `could not take the daemon lock ${path}`, {
    hint: "Another sbx daemon is starting at the same time; run the command again.",
  });
}
