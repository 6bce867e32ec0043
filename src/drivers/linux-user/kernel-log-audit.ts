// The kernel-log audit (Linux guests): raw connections the firewall dropped (`sbx-block uid=…` lines) become audit rows of the sandbox whose guest sent them.
import type { Store } from "../../store/store";
import type { Exec } from "../../sys/exec";
import type { Logger } from "../../sys/log";
import type { Paths } from "../../sys/paths";
import type { Watcher } from "../driver";
import { userSpec } from "../user-account";
import { auditOf, KernelLogMonitor, type BlockEvent } from "./monitor";

/**
 * Blocked raw connections of Linux guests, read from the kernel log, become audit entries (`egress`/`blocked-raw`) of
 * the sandbox whose guest UID sent them, so `sbx logs` and the dashboard show them. UIDs are mapped through the
 * backend's inventory, refreshed when an unknown UID shows up.
 * runs: dmesg --raw --kernel (every intervalMs); getent passwd; nft -j list table … (on an unknown uid)
 */
export function startKernelLogAudit(o: {
  /** The backend's inventory of its guests (backend.ts): which uid is which sandbox id. */
  backend: { inventory(): Promise<Map<string, { id: string; user?: { uid: number } | null | undefined; meta?: { uid: number } | null | undefined }>> };
  exec: Exec;
  store: Pick<Store, "listSandboxes" | "audit">;
  paths: Paths;
  log: Logger;
  intervalMs?: number;
  /** Called after each event is written (the feed bus), with the audit row's id. */
  onEvent?: (sandboxId: number, e: BlockEvent, auditId: number) => void;
}): Watcher & { poll(): Promise<number> } {
  const bySid = new Map<string, number>(); // sandbox id (spec) → store row id
  const byUid = new Map<number, number>(); // guest uid → store row id
  const refresh = async () => {
    bySid.clear();
    for (const r of o.store.listSandboxes({ all: true })) {
      if (r.backend !== "linux-user") continue;
      try {
        bySid.set(userSpec(o.paths, r).id, r.id);
      } catch {
        /* unreadable identity: not ours to report */
      }
    }
    for (const inv of (await o.backend.inventory()).values()) {
      const rowId = bySid.get(inv.id);
      const uid = inv.user?.uid ?? inv.meta?.uid;
      if (rowId !== undefined && uid !== undefined) byUid.set(uid, rowId);
    }
  };
  const monitor = new KernelLogMonitor(o.exec);
  let started = false;
  const poll = async (): Promise<number> => {
    if (!started) {
      started = true;
      await monitor.skipExisting();
    }
    const events = await monitor.poll();
    let n = 0;
    for (const e of events) {
      if (!byUid.has(e.uid)) await refresh();
      const rowId = byUid.get(e.uid);
      if (rowId === undefined) continue; // another sbx root's guest, or one already removed
      const auditId = o.store.audit({ sandboxId: rowId, ...auditOf(e) });
      o.onEvent?.(rowId, e, auditId);
      n++;
    }
    return n;
  };
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    if (stopped) return;
    running = poll().catch((e: unknown) => o.log.warn("kernel log poll failed", { err: e }));
  }, o.intervalMs ?? 2000);
  return {
    poll,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
