// Test-only Backend whose "system" is a JSON file, so a daemon subprocess and the test agree on what exists (and the test can make them disagree).
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import type { Backend } from "../../src/drivers/backend";
import type { Change, CleanupReport, Observed, SandboxSpec, ShellRequest } from "../../src/core/spec";

export interface FileEntry {
  id: string;
  name: string;
  repo: string;
  phase: "running" | "stopped";
}

export interface FileState {
  entries: Record<string, FileEntry>;
  /** Every mutating call, in order, e.g. "apply <id>": tests check ordering against guard start. */
  log: string[];
}

export function readState(file: string): FileState {
  if (!existsSync(file)) return { entries: {}, log: [] };
  return JSON.parse(readFileSync(file, "utf8")) as FileState;
}

export function writeState(file: string, s: FileState): void {
  writeFileSync(`${file}.tmp`, JSON.stringify(s, null, 2));
  renameSync(`${file}.tmp`, file);
}

export class FileBackend implements Backend {
  readonly kind = "fake" as const;
  constructor(readonly file: string) {}

  private mutate<T>(fn: (s: FileState) => T): T {
    const s = readState(this.file);
    const r = fn(s);
    writeState(this.file, s);
    return r;
  }

  async apply(spec: SandboxSpec): Promise<Change> {
    return this.mutate((s) => {
      s.log.push(`apply ${spec.id}`);
      if (s.entries[spec.id]?.phase === "running") return { changed: false };
      s.entries[spec.id] = { id: spec.id, name: spec.name, repo: spec.repo, phase: "running" };
      return { changed: true };
    });
  }

  async stop(spec: SandboxSpec): Promise<Change> {
    return this.mutate((s) => {
      s.log.push(`stop ${spec.id}`);
      const e = s.entries[spec.id];
      if (!e || e.phase === "stopped") return { changed: false };
      e.phase = "stopped";
      return { changed: true };
    });
  }

  async remove(spec: SandboxSpec): Promise<Change> {
    return this.mutate((s) => {
      s.log.push(`remove ${spec.id}`);
      if (!s.entries[spec.id]) return { changed: false };
      delete s.entries[spec.id];
      return { changed: true };
    });
  }

  async inspect(spec: SandboxSpec): Promise<Observed> {
    const e = readState(this.file).entries[spec.id];
    return { id: spec.id, name: spec.name, repo: spec.repo, phase: e?.phase ?? "absent", detail: {} };
  }

  async list(): Promise<Observed[]> {
    return Object.values(readState(this.file).entries).map((e) => ({ ...e, detail: {} }));
  }

  async cleanup(keep: ReadonlySet<string>, opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    const removed: string[] = [];
    const s = readState(this.file);
    for (const [id, e] of Object.entries(s.entries)) {
      if (keep.has(id)) continue;
      removed.push(`sandbox ${e.name} (${id})`);
      if (!opts.dryRun) {
        delete s.entries[id];
        s.log.push(`cleanup ${id}`);
      }
    }
    if (!opts.dryRun) writeState(this.file, s);
    return { removed };
  }

  /**
   * A real local shell under sbx's PTY, in the requested directory: enough to exercise sessions end to end. As a
   * sandbox's process, it has only what sbx gives it (the request's variables), PATH and HOME: nothing of the host
   * environment of whoever started it (the CLI's, when a piped command runs on the caller's side; the daemon's).
   */
  shellArgv(spec: SandboxSpec, req: ShellRequest): string[] {
    const cmd = req.argv.length ? req.argv : ["sh", "-i"];
    const base = [`PATH=${process.env.PATH ?? "/usr/bin:/bin"}`, `HOME=${process.env.HOME ?? "/"}`];
    return ["env", "-i", "-C", req.cwd, ...base, `SANDBOX=${spec.name}`, "PS1=$ ", ...Object.entries(req.env).map(([k, v]) => `${k}=${v}`), ...cmd];
  }
}
