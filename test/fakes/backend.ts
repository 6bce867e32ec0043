// An in-memory Backend: the contract suite's reference implementation and the daemon tests' stand-in.
import type { Backend } from "../../src/drivers/backend";
import type { Change, CleanupReport, Observed, SandboxSpec, ShellRequest } from "../../src/core/spec";

interface Entry {
  spec: SandboxSpec;
  phase: "running" | "stopped";
}

export class FakeBackend implements Backend {
  readonly kind = "fake" as const;
  readonly entries = new Map<string, Entry>();
  /** Count of operations that changed something: the contract's "apply twice mutates once". */
  mutations = 0;

  async apply(spec: SandboxSpec): Promise<Change> {
    const e = this.entries.get(spec.id);
    if (e?.phase === "running") return { changed: false };
    this.entries.set(spec.id, { spec, phase: "running" });
    this.mutations++;
    return { changed: true };
  }

  async stop(spec: SandboxSpec): Promise<Change> {
    const e = this.entries.get(spec.id);
    if (!e || e.phase === "stopped") return { changed: false };
    e.phase = "stopped";
    this.mutations++;
    return { changed: true };
  }

  async remove(spec: SandboxSpec): Promise<Change> {
    if (!this.entries.delete(spec.id)) return { changed: false };
    this.mutations++;
    return { changed: true };
  }

  async inspect(spec: SandboxSpec): Promise<Observed> {
    const e = this.entries.get(spec.id);
    return { id: spec.id, name: spec.name, repo: spec.repo, phase: e?.phase ?? "absent", detail: {} };
  }

  async list(): Promise<Observed[]> {
    return [...this.entries.values()].map((e) => ({
      id: e.spec.id,
      name: e.spec.name,
      repo: e.spec.repo,
      phase: e.phase,
      detail: {},
    }));
  }

  async cleanup(keep: ReadonlySet<string>, opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    const removed: string[] = [];
    for (const [id, e] of this.entries) {
      if (keep.has(id)) continue;
      removed.push(`sandbox ${e.spec.name} (${id})`);
      if (!opts.dryRun) {
        this.entries.delete(id);
        this.mutations++;
      }
    }
    return { removed };
  }

  shellArgv(spec: SandboxSpec, req: ShellRequest): string[] {
    return ["fake-enter", spec.id, "--cwd", req.cwd, ...(req.argv.length ? ["--", ...req.argv] : [])];
  }
}
