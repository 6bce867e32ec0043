// The pflog0 audit (macOS guests): a long-lived `sudo -n tcpdump … -i pflog0` child whose blocked packets become audit rows (the daemon publishes them); restarted with backoff, stopped by pid.
import { auditOfPflog, monitorCommand, pflogFilter, type PflogEvent } from "./monitor";
import { userSpec } from "../user-account";
import type { Store } from "../../store/store";
import type { Exec } from "../../sys/exec";
import type { Paths } from "../../sys/paths";
import type { Logger } from "../../sys/log";

/** A running child whose output arrives line by line. */
export interface LineChild {
  readonly pid: number;
  kill(signal?: NodeJS.Signals): void;
  readonly exited: Promise<number>;
}

/** Starts argv and hands over each output line (stdout and stderr; without the line end). */
export type SpawnLines = (argv: readonly string[], onLine: (line: string) => void) => LineChild;

/**
 * Production SpawnLines through the Exec seam. `Exec.terminal` is the one Exec call that gives a long-lived child with
 * a pid to stop (`run` buffers to the end and cannot be stopped); the PTY is sbx's own, the child gets no input from
 * it, and tcpdump's stderr (its banner, sudo's refusal) arrives on the same lines, which the parser ignores but the
 * restart log shows. runs: <argv> under a PTY (here: sudo -n /usr/sbin/tcpdump -l -n -e -ttt -i pflog0)
 */
export function ptyLines(exec: Exec): SpawnLines {
  return (argv, onLine) => {
    let buf = "";
    const decoder = new TextDecoder();
    const t = exec.terminal(argv, {
      cols: 500,
      rows: 24,
      onData: (d) => {
        buf += decoder.decode(d, { stream: true });
        let i: number;
        while ((i = buf.indexOf("\n")) >= 0) {
          onLine(buf.slice(0, i).replace(/\r$/, ""));
          buf = buf.slice(i + 1);
        }
      },
    });
    return {
      pid: t.pid,
      kill: (sig) => t.kill(sig),
      exited: t.exited.then((code) => {
        if (buf !== "") onLine(buf.replace(/\r$/, ""));
        buf = "";
        return code;
      }),
    };
  };
}

export interface PflogAuditOptions {
  /** The backend's guest accounts (backend.ts): uid → sandbox id. */
  backend: { guestUids(): Promise<Map<number, string>> };
  spawn: SpawnLines;
  store: Pick<Store, "listSandboxes" | "audit">;
  paths: Paths;
  log: Logger;
  /** Called after each event is written (the feed bus and notifications), with the audit row's id. */
  onEvent?: (sandboxId: number, e: PflogEvent & { uid: number }, auditId: number) => void;
  /** Restart delay after the child ends: doubles from min to max; back to min after a run longer than healthyMs. */
  backoff?: { minMs: number; maxMs: number; healthyMs?: number };
  dedupeMs?: number;
  now?: () => number;
  /** How long stop() waits after SIGTERM before SIGKILL. */
  killGraceMs?: number;
}

export interface PflogAudit {
  stop(): Promise<void>;
  /** The tcpdump child's pid while it runs. */
  pid(): number | null;
  /** How many times the child was (re)started. */
  starts(): number;
  /** Resolves when every line received so far has been handled (tests). */
  idle(): Promise<void>;
}

/**
 * Blocked raw connections of macOS guests → audit entries (`egress`/`blocked-raw`, the shape of the Linux kernel-log
 * audit) of the sandbox whose anchor `sbx_<uid>` dropped them. UIDs map to sandbox ids through the backend's guest
 * accounts and to store rows through their stored identity; an unknown UID (another host user's guest, a removed
 * sandbox) is looked up again at most every 30 s and otherwise ignored.
 * runs: sudo -n /usr/sbin/tcpdump -l -n -e -ttt -i pflog0 (long-lived); dscl . -list /Users UniqueID (on an unknown uid)
 */
export function startPflogAudit(o: PflogAuditOptions): PflogAudit {
  const now = o.now ?? Date.now;
  const minMs = o.backoff?.minMs ?? 1000;
  const maxMs = o.backoff?.maxMs ?? 60_000;
  const healthyMs = o.backoff?.healthyMs ?? 60_000;
  const filter = pflogFilter({ ...(o.dedupeMs !== undefined ? { dedupeMs: o.dedupeMs } : {}), now });
  const byUid = new Map<number, number>(); // guest uid → store row id
  const missed = new Map<number, number>(); // unknown uid → when it was last looked up
  const refresh = async () => {
    const bySid = new Map<string, number>();
    for (const r of o.store.listSandboxes({ all: true })) {
      if (r.backend !== "macos") continue;
      try {
        bySid.set(userSpec(o.paths, r).id, r.id);
      } catch {
        /* unreadable identity: not ours to report */
      }
    }
    byUid.clear();
    for (const [uid, sid] of await o.backend.guestUids()) {
      const rowId = bySid.get(sid);
      if (rowId !== undefined) byUid.set(uid, rowId);
    }
  };
  const handle = async (line: string) => {
    const e = filter(line);
    if (!e) return;
    if (!byUid.has(e.uid)) {
      const last = missed.get(e.uid);
      if (last === undefined || now() - last >= 30_000) {
        missed.set(e.uid, now());
        await refresh();
      }
    }
    const rowId = byUid.get(e.uid);
    if (rowId === undefined) return;
    missed.delete(e.uid);
    const a = auditOfPflog(e);
    const id = o.store.audit({ sandboxId: rowId, ...a });
    o.onEvent?.(rowId, e, id);
  };

  let stopped = false;
  let child: LineChild | null = null;
  let starts = 0;
  let delay = minMs;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let queue: Promise<void> = Promise.resolve();
  let tail: string[] = [];
  let running: Promise<void> = Promise.resolve();

  const start = () => {
    timer = null;
    if (stopped) return;
    const began = now();
    tail = [];
    let c: LineChild;
    try {
      c = o.spawn(monitorCommand(), (line) => {
        tail.push(line);
        if (tail.length > 5) tail.shift();
        queue = queue.then(() => handle(line)).catch((err: unknown) => o.log.warn("pflog line not recorded", { err }));
      });
    } catch (err) {
      o.log.error("pflog monitor could not start", { err, retryMs: delay });
      schedule();
      return;
    }
    starts++;
    child = c;
    o.log.info("pflog monitor started", { pid: c.pid });
    running = c.exited.then(
      (code) => exited(c, code, began),
      (err: unknown) => exited(c, -1, began, err),
    );
  };
  const exited = (c: LineChild, code: number, began: number, err?: unknown) => {
    if (child === c) child = null;
    if (stopped) return;
    if (now() - began >= healthyMs) delay = minMs;
    // sudo's refusal ("a password is required": the sudoers rule is missing) is in the last lines.
    o.log.warn("pflog monitor ended; restarting", { code, ...(err ? { err } : {}), output: tail.join(" | ").slice(0, 300), retryMs: delay });
    schedule();
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(start, delay);
    delay = Math.min(delay * 2, maxMs);
  };
  start();

  return {
    pid: () => child?.pid ?? null,
    starts: () => starts,
    idle: () => queue,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      const c = child;
      if (c) {
        c.kill("SIGTERM");
        let t: ReturnType<typeof setTimeout> | undefined;
        const grace = new Promise<"late">((r) => (t = setTimeout(() => r("late"), o.killGraceMs ?? 2000)));
        if ((await Promise.race([c.exited.then(() => "done" as const, () => "done" as const), grace])) === "late") c.kill("SIGKILL");
        clearTimeout(t);
      }
      await running;
      await queue;
    },
  };
}
