// The pf watchdog (macOS): pf is the only thing between a guest's sockets and the network, and anyone with root can
// switch it off (`pfctl -d` drops every enable token, sbx's too) or reload pf.conf (dropping sbx's anchors). Every few
// seconds the daemon looks; when pf is off or an anchor is gone it stops every running macOS sandbox first (its
// processes ended, no new logins), then puts pf back, then writes why in each sandbox's audit and tells the person.
import type { Sandbox } from "../../core/schemas";
import type { Change, SandboxSpec } from "../../core/spec";
import { userSpec } from "../user-account";
import type { Store } from "../../store/store";
import type { Paths } from "../../sys/paths";
import type { Logger } from "../../sys/log";
import type { WatchContext } from "../driver";

export const PF_WATCH_MS = 3000;

export interface PfWatchdogDeps {
  /** What the backend (backend.ts) says of pf and does about it. */
  backend: {
    pfProblems(specs: readonly SandboxSpec[]): Promise<string[]>;
    reapply(specs: readonly SandboxSpec[]): Promise<Change>;
    stop(spec: SandboxSpec): Promise<Change>;
  };
  store: Pick<Store, "listSandboxes" | "audit">;
  paths: Paths;
  log: Logger;
  /** Stops a sandbox as `sbx stop` does (sessions told, guards down, its state stopped even when part of that fails). */
  stopSandbox: (row: Sandbox, why: string) => Promise<void>;
  notify: WatchContext["notify"];
  intervalMs?: number;
}

/** Pure: what the person reads when pf was lost. */
export function pfLostNotification(problems: readonly string[], stopped: readonly string[]): { title: string; body: string } {
  return {
    title: "sbx: the firewall around sandboxes was switched off",
    body: `${problems.join("; ")}. ${stopped.length > 0 ? `Stopped ${stopped.join(", ")} before putting pf back` : "No sandbox was running"}; start one again with \`sbx shell NAME\`.`,
  };
}

export function startPfWatchdog(d: PfWatchdogDeps): { stop(): Promise<void>; check(): Promise<string[]> } {
  const check = async (): Promise<string[]> => {
    const rows = d.store.listSandboxes({ all: true }).filter((r) => r.backend === "macos");
    const specs = rows.flatMap((row) => {
      try {
        return [{ row, spec: userSpec(d.paths, row) }];
      } catch {
        return [];
      }
    });
    if (specs.length === 0) return [];
    const problems = await d.backend.pfProblems(specs.map((x) => x.spec));
    if (problems.length === 0) return [];
    d.log.error("pf lost: stopping every macOS sandbox before putting it back", { problems: problems.join("; ") });
    const stopped: string[] = [];
    for (const { row, spec } of specs) {
      if (row.state !== "active") continue;
      const why = `the firewall was switched off (${problems.join("; ")}): sbx stopped this sandbox`;
      try {
        await d.stopSandbox(row, why);
      } catch (err) {
        // Whatever else failed, its processes must end: the backend's own stop (logins off, every process killed).
        d.log.error("stopping a sandbox after pf was lost failed; ending its processes", { sandbox: row.name, err });
        await d.backend.stop(spec);
      }
      d.store.audit({ sandboxId: row.id, kind: "guard", action: "pf-lost", detail: { problems, stopped: true } });
      stopped.push(row.name);
    }
    await d.backend.reapply(specs.map((x) => x.spec));
    d.log.warn("pf put back", { stopped: stopped.join(",") || "none" });
    d.notify(pfLostNotification(problems, stopped));
    return problems;
  };
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    if (stopped) return;
    running = running.then(() => (stopped ? undefined : check())).catch((err: unknown) => d.log.warn("pf watchdog check failed", { err }));
  }, d.intervalMs ?? PF_WATCH_MS);
  return {
    check,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
