// The daemon's services for the user-account backends (linux-user, macos) that are not per sandbox: the audits of
// blocked raw connections (the kernel log on Linux, pflog on macOS), published on the feed.
import type { LinuxUserBackend } from "../drivers/linux-user/backend";
import { auditOf, KernelLogMonitor, type BlockEvent } from "../drivers/linux-user/monitor";
import { auditOfPflog, monitorCommand } from "../drivers/macos/monitor";
import type { MacosBackend } from "../drivers/macos/backend";
import { userSpec } from "../drivers/user-account";
import type { Store } from "../store/store";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { feedFromAudit, type FeedEvent } from "../events/feed";
import type { Logger } from "../sys/log";
import { ptyLines, startPflogAudit, type SpawnLines } from "./pflog-audit";
import { notificationArgv, type Notification } from "./notify";
import { startPfWatchdog } from "./pf-watchdog";
import type { Sandbox } from "../core/schemas";

export interface UserBackends {
  linuxUser?: LinuxUserBackend;
  macos?: MacosBackend;
}



/**
 * Blocked raw connections of Linux guests, read from the kernel log, become audit entries (`egress`/`blocked-raw`) of
 * the sandbox whose guest UID sent them, so `sbx logs` and the dashboard show them. UIDs are mapped through the
 * backend's inventory, refreshed when an unknown UID shows up.
 * runs: dmesg --raw --kernel (every intervalMs); getent passwd; nft -j list table … (on an unknown uid)
 */
export function startKernelLogAudit(o: {
  backend: LinuxUserBackend;
  exec: Exec;
  store: Store;
  paths: Paths;
  log: Logger;
  intervalMs?: number;
  /** Called after each event is written (the feed bus), with the audit row's id. */
  onEvent?: (sandboxId: number, e: BlockEvent, auditId: number) => void;
}): { stop(): Promise<void>; poll(): Promise<number> } {
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


/**
 * The live feed's side of blocked raw connections: publishes the audit row just written as the dashboard's
 * history shows it (`feedFromAudit`: an egress denial with reason `blocked-raw`), so the dashboard, the desktop
 * notifier (one per sandbox and host per interval, like proxy denials) and the chat bot see it. Repeats of the same
 * destination within windowMs are audited but not published again (a blocked TCP connect retries its SYN).
 */
export function rawBlockFeed(
  store: Store,
  publish: (e: FeedEvent) => void,
  opts: { windowMs?: number; now?: () => number } = {},
): (sandboxId: number, auditId: number, audit: { kind: string; action: string; detail: Record<string, unknown> }) => void {
  const window = opts.windowMs ?? 10_000;
  const now = opts.now ?? Date.now;
  const last = new Map<string, number>();
  return (sandboxId, auditId, audit) => {
    const row = { id: auditId, ts: now(), sandboxId, ...audit };
    const e = feedFromAudit(row, (id) => store.getSandbox(id)?.name ?? `#${id}`);
    if (!e || e.kind !== "egress") return;
    const key = `${sandboxId}|${e.method}|${e.host}|${e.port}`;
    const t = now();
    const prev = last.get(key);
    if (prev !== undefined && t - prev < window) return;
    last.set(key, t);
    if (last.size > 2000) for (const [k, v] of last) if (t - v >= window) last.delete(k);
    publish(e);
  };
}

/**
 * The daemon-wide audits of blocked raw connections, one per user-account backend present: the kernel log (Linux,
 * polled) and pflog0 (macOS, a long-lived tcpdump restarted with backoff); both write `egress`/`blocked-raw` rows and
 * publish them on the feed. `spawn` replaces the PTY-backed child (tests).
 * runs: see startKernelLogAudit; sudo -n /usr/sbin/tcpdump -l -n -e -ttt -i pflog0
 */
export function startUserBackendAudits(o: {
  users: UserBackends;
  exec: Exec;
  store: Store;
  paths: Paths;
  log: Logger;
  publish: (e: FeedEvent) => void;
  spawn?: SpawnLines;
  kernelLogIntervalMs?: number;
  /** Stops a sandbox as `sbx stop` does; with it, macOS gets the pf watchdog (pf-watchdog.ts). */
  stopSandbox?: (row: Sandbox, why: string) => Promise<void>;
  notify?: (n: Notification) => void;
  pfWatchMs?: number;
}): { stop(): Promise<void>; poll(): Promise<number> } {
  const feed = rawBlockFeed(o.store, o.publish);
  const parts: { stop(): Promise<void> }[] = [];
  let kernel: ReturnType<typeof startKernelLogAudit> | null = null;
  if (o.users.linuxUser) {
    kernel = startKernelLogAudit({
      backend: o.users.linuxUser,
      exec: o.exec,
      store: o.store,
      paths: o.paths,
      log: o.log.with({ service: "kernel-log" }),
      ...(o.kernelLogIntervalMs !== undefined ? { intervalMs: o.kernelLogIntervalMs } : {}),
      onEvent: (sid, e, auditId) => feed(sid, auditId, auditOf(e)),
    });
    parts.push(kernel);
  }
  if (o.users.macos) {
    parts.push(
      startPflogAudit({
        backend: o.users.macos,
        spawn: o.spawn ?? ptyLines(o.exec),
        store: o.store,
        paths: o.paths,
        log: o.log.with({ service: "pflog", command: monitorCommand().join(" ") }),
        onEvent: (sid, e, auditId) => feed(sid, auditId, auditOfPflog(e)),
      }),
    );
  }
  if (o.users.macos && o.stopSandbox) {
    const mac = o.users.macos;
    const notify = o.notify ?? ((n: Notification) => void o.exec.run(notificationArgv("darwin", n)!, { check: false }).catch(() => {}));
    parts.push(
      startPfWatchdog({
        backend: mac,
        store: o.store,
        paths: o.paths,
        log: o.log.with({ service: "pf-watchdog" }),
        stopSandbox: o.stopSandbox,
        notify,
        ...(o.pfWatchMs !== undefined ? { intervalMs: o.pfWatchMs } : {}),
      }),
    );
  }
  return {
    stop: async () => void (await Promise.all(parts.map((p) => p.stop()))),
    // The kernel-log audit's poll, now (tests read the log at a chosen moment; the pflog audit is a stream).
    poll: async () => (kernel ? kernel.poll() : 0),
  };
}
