// The daemon's wiring of the user-account backends (linux-user, macos): spec, bring-up, firewall restore, ref sync, kernel-log audit.
//
// productionComponents() registers these next to Docker. Everything here dispatches on the store row's backend, so a
// Docker sandbox never takes a user-account path and vice versa.
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Backend, SandboxSpec } from "../drivers/backend";
import { LinuxUserBackend } from "../drivers/linux-user/backend";
import { auditOf, KernelLogMonitor, type BlockEvent } from "../drivers/linux-user/monitor";
import { auditOfPflog, monitorCommand } from "../drivers/macos/monitor";
import { MacosBackend } from "../drivers/macos/backend";
import type { Sandbox } from "../core/schemas";
import { isUserBackend } from "../core/backend-kind";
import { hostUserExec } from "../sys/as-user";
import { userSpec, type UserAccountBackend } from "../drivers/user-account";
import type { Store } from "../store/store";
import { refSyncGuard, type RefSyncGuardTarget } from "../guards/ref-sync";
import { hostGitEnv, hostRefsArgv, parseHostRefs } from "../sync/git-argv";
import type { Exec } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { sandboxRemote } from "../workspace/clone";
import { feedFromAudit, type FeedEvent } from "../events/feed";
import type { GuardContext, SandboxGuard } from "../guards/guards";
import type { Logger } from "./log";
import { ptyLines, startPflogAudit, type SpawnLines } from "./pflog-audit";

export interface UserBackends {
  linuxUser?: LinuxUserBackend;
  macos?: MacosBackend;
}

export function userBackendOf(b: UserBackends, kind: string): UserAccountBackend | undefined {
  if (kind === "linux-user") return b.linuxUser;
  if (kind === "macos") return b.macos;
  return undefined;
}

/**
 * An Exec for the host repo's git when the daemon is root and the repo belongs to someone else: git refuses such a repo
 * ("dubious ownership") unless told it is safe, and only protected config may say so. The bridge only reads the host
 * repo (remotes, refs, objects through its gate's alternates), so it keeps running as the daemon with exactly that
 * repo marked safe. runs: <argv> with GIT_CONFIG_COUNT/KEY/VALUE = safe.directory=<repo>
 */
export function safeRepoExec(exec: Exec, repo: string): Exec {
  const add = (env: Record<string, string> | undefined) => {
    const n = Number(env?.GIT_CONFIG_COUNT ?? "0");
    return { ...env, GIT_CONFIG_COUNT: String(n + 1), [`GIT_CONFIG_KEY_${n}`]: "safe.directory", [`GIT_CONFIG_VALUE_${n}`]: repo };
  };
  return {
    ...exec,
    run: (argv, opts = {}) => exec.run(argv, { ...opts, env: add(opts.env) }),
    terminal: (argv, opts) => exec.terminal(argv, { ...opts, env: add(opts.env) }),
  } as Exec;
}

/**
 * Fail closed at daemon start, before reconcile starts any guard: every user-account sandbox gets its firewall back in
 * block-all form (Linux: `restoreFirewall` with active=false; macOS: `reapply`, whose anchor only ever allows the proxy
 * port). Reconcile then brings active ones to run mode AFTER their guards are up (bringUp → apply). A failure is logged
 * and audited; the sandbox's apply fails the same way later, so it stays fenced.
 */
export async function restoreUserFirewalls(b: UserBackends, store: Store, paths: Paths, log: Logger): Promise<void> {
  const rows = store.listSandboxes().filter((r) => isUserBackend(r.backend));
  const specs = (kind: string) =>
    rows.filter((r) => r.backend === kind).flatMap((r) => {
      try {
        return [{ row: r, spec: userSpec(paths, r) }];
      } catch (e) {
        log.error("unreadable user-sandbox record: left fenced", { sandbox: r.name, err: e });
        return [];
      }
    });
  if (b.linuxUser) {
    const list = specs("linux-user");
    try {
      const n = await b.linuxUser.restoreFirewall(list.map(({ spec }) => ({ spec, active: false })));
      log.info("firewall restored (block-all until guards are up)", { backend: "linux-user", sandboxes: list.length, reloaded: n });
    } catch (e) {
      log.error("could not restore the nft rules of user sandboxes", { err: e });
      for (const { row } of list) store.audit({ sandboxId: row.id, kind: "daemon", action: "firewall.restore-failed", detail: { error: (e as Error).message } });
    }
  }
  if (b.macos) {
    const list = specs("macos");
    try {
      const r = await b.macos.reapply(list.map(({ spec }) => spec));
      log.info("pf anchors re-applied", { backend: "macos", sandboxes: list.length, changed: r.changed });
    } catch (e) {
      log.error("could not re-apply the pf anchors of user sandboxes", { err: e });
      for (const { row } of list) store.audit({ sandboxId: row.id, kind: "daemon", action: "firewall.restore-failed", detail: { error: (e as Error).message } });
    }
  }
}

/**
 * Ref sync for user-account sandboxes: clone → host is ref sync's pinned fetch run in the host repo AS THE HOST USER
 * (root's would leave root-owned objects there); host → clone runs AS THE GUEST (`syncHostRefs` of either backend:
 * update-ref of refs/remotes/host/*). On Linux the objects are shared already; on macOS the host first fetches its
 * branches into the host-owned mirror the clone borrows objects from (`MacosBackend.updateMirror`). While the sandbox
 * is stopped the guest runs nothing: the sync is owed and done at the next start. Docker rows get `docker`.
 * runs: git … -C <host repo> for-each-ref; (macOS) git … -C <mirror> fetch … <host repo>; sudo -u <guest> git … update-ref --stdin
 */
export function userRefSyncTarget(ctx: GuardContext, backend: UserAccountBackend): RefSyncGuardTarget {
  const spec = ctx.spec;
  const hostExec = ctx.exec; // already the host user's (dispatchingRefSyncGuard)
  let owed = false;
  return {
    hostRepo: spec.repo,
    clonePath: backend.workspace(spec),
    remoteName: sandboxRemote(spec.name),
    expectedAlternates: backend.expectedAlternates(spec),
    insideFetch: async () => {
      const refs = await hostExec.run(hostRefsArgv(spec.repo), { env: hostGitEnv(), replaceEnv: true, check: false });
      if (refs.exitCode !== 0) return refs;
      if (backend instanceof MacosBackend) {
        // macOS: the guest's clone borrows objects from the host-owned mirror, so the host fetches into the mirror
        // first (host side, also while stopped); the guest's update-ref below then finds every object it names.
        const m = await backend.updateMirror(spec, hostExec);
        if (m.exitCode !== 0) return m;
      } else if (!(backend instanceof LinuxUserBackend)) {
        return { argv: [], exitCode: 0, stdout: "", stderr: "" };
      }
      if ((await backend.inspect(spec)).phase !== "running") {
        owed = true;
        return { argv: [], exitCode: 0, stdout: "", stderr: "" };
      }
      return backend.syncHostRefs(spec, parseHostRefs(refs.stdout));
    },
    syncOnStart: () => {
      const o = owed;
      owed = false;
      return o;
    },
  };
}

/**
 * One ref-sync guard for every row: the user target (with every host-side git as the host user) for user-account
 * rows, `other` (Docker's) for the rest; with no `other`, non-user rows get no ref sync (a healthy no-op).
 */
export function dispatchingRefSyncGuard(users: UserBackends, other: SandboxGuard | null, selfUid: number): SandboxGuard {
  const user = refSyncGuard<GuardContext>((ctx) => userRefSyncTarget(ctx, userBackendOf(users, ctx.sandbox.backend)!));
  return {
    name: "ref-sync",
    async start(ctx) {
      const ub = userBackendOf(users, ctx.sandbox.backend);
      if (ub) {
        const uctx = { ...ctx, exec: hostUserExec(ctx.exec, ctx.spec.hostUser, selfUid) };
        // A new sandbox's clone is made by the backend's apply, which runs after the guards: then ref sync starts
        // once the sandbox runs (a sandbox that has never run has nothing to sync).
        if (existsSync(join(ub.workspace(ctx.spec), ".git"))) return user.start(uctx);
        let inner: Awaited<ReturnType<typeof user.start>> | null = null;
        return {
          health: () => inner?.health() ?? { ok: true, detail: "starts once the sandbox's clone exists" },
          async sandboxStarted() {
            inner ??= await user.start(uctx);
            await inner.sandboxStarted();
          },
          stop: async () => inner?.stop(),
        };
      }
      if (other) return other.start(ctx);
      return { health: () => ({ ok: true, detail: "not used" }), stop: async () => {} };
    },
  };
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

/** Whether a backend is one of the two user-account backends (for registration). */
export function isUserAccountBackend(b: Backend): b is UserAccountBackend {
  return isUserBackend(b.kind);
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
  return {
    stop: async () => void (await Promise.all(parts.map((p) => p.stop()))),
    // The kernel-log audit's poll, now (tests read the log at a chosen moment; the pflog audit is a stream).
    poll: async () => (kernel ? kernel.poll() : 0),
  };
}
