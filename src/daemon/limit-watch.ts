// Notices when a sandbox runs into its memory or process limit: an audit row (`sbx logs --kind limit`) and a note for the command that was running.
import { describeHit, limitHits, type LimitCounters, type LimitHit } from "../core/limits";
import type { Sandbox } from "../core/schemas";
import { LimitsSchema } from "../drivers/identity";
import type { SandboxService } from "../sandboxes/service";
import type { Store } from "../store/store";
import type { Logger } from "../sys/log";

export interface LimitWatchDeps {
  service: Pick<SandboxService, "counters">;
  store: Pick<Store, "audit" | "listSandboxes">;
  log: Logger;
}

/**
 * Reads each sandbox's kernel counters (OOM kills, refused forks) and records what changed since its last reading.
 * A sandbox's first reading after the daemon starts is its baseline: what it hit before is in `sbx limits`, not logged twice.
 */
export class LimitWatch {
  private readonly last = new Map<number, LimitCounters>();
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly d: LimitWatchDeps) {}

  /**
   * Reads a sandbox's counters now; what they gained since the last reading (by anyone: a command's end, the
   * periodic pass) is audited once. The counters, or null (not running, no counters for its kind).
   */
  async sample(row: Sandbox): Promise<LimitCounters | null> {
    const now = await this.d.service.counters(row).catch(() => null);
    if (now === null) {
      this.last.delete(row.id); // stopped: its next container or cgroup counts from zero
      return null;
    }
    const before = this.last.get(row.id);
    this.last.set(row.id, now);
    if (before !== undefined) this.record(row, limitHits(before, now));
    return now;
  }

  /** Reads the counters when a command starts, and gives what it ran into when it ends (its own span, whoever else read them). */
  async span(row: Sandbox): Promise<() => Promise<LimitHit[]>> {
    const start = await this.sample(row);
    return async () => {
      const end = await this.sample(row);
      return start !== null && end !== null ? limitHits(start, end) : [];
    };
  }

  private record(row: Sandbox, hits: readonly LimitHit[]): void {
    const limits = LimitsSchema.safeParse(row.identity.limits);
    for (const h of hits) {
      try {
        this.d.store.audit({
          sandboxId: row.id,
          kind: "limit",
          action: h.limit,
          detail: { count: h.count, ...(limits.success ? { limit: limits.data[h.limit] } : {}) },
        });
      } catch (e) {
        this.d.log.error("audit write failed", { err: e });
      }
      this.d.log.warn("sandbox hit a limit", { sandbox: row.name, limit: h.limit, count: h.count });
    }
  }

  /** A person's lines for the hits of a command that just ended (empty when none). */
  notes(row: Sandbox, hits: readonly LimitHit[]): string {
    const limits = LimitsSchema.safeParse(row.identity.limits);
    return hits.map((h) => `sbx: ${describeHit(row.name, h, limits.success ? limits.data : null)}\n`).join("");
  }

  /** Reads every active sandbox every `ms`, so a hit is logged even when no command of sbx's was waiting on it. */
  start(ms: number): void {
    if (this.timer) return;
    let busy = false;
    this.timer = setInterval(() => {
      if (busy) return;
      busy = true;
      const rows = this.d.store.listSandboxes().filter((r) => r.state === "active");
      void Promise.all(rows.map((r) => this.sample(r))).finally(() => (busy = false));
    }, ms);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
