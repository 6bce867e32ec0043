// Serves the dashboard with Bun.serve on 127.0.0.1 (the last start's port when it is free); returns the launch URL (which holds the token) and close().
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { LaunchTickets, randomSecret, type TicketState } from "./auth";
import { createDashboardApp, type UiLog } from "./app";
import type { DataSource } from "../events/feed";

export interface DashboardOptions {
  source: DataSource;
  log?: UiLog;
  /** 0 (the default) lets the kernel choose a free port. */
  port?: number;
  /** Injected by tests; a fresh 256-bit token otherwise. */
  token?: string;
  keepAliveMs?: number;
  /**
   * Where the dashboard keeps what lets an open tab reconnect after a daemon restart (its port and its session key),
   * 0600. Without one, both are new at every start.
   */
  stateFile?: string;
}

/** What a restarted dashboard takes over from the last one: the port it listened on and the key its sessions are signed with. */
interface Kept {
  port: number;
  sessionKey: string;
}

function readKept(file: string | undefined): Kept | null {
  if (file === undefined) return null;
  try {
    const v = JSON.parse(readFileSync(file, "utf8")) as Partial<Kept>;
    if (typeof v.sessionKey === "string" && v.sessionKey.length >= 32 && Number.isInteger(v.port) && v.port! > 0 && v.port! < 65536) return v as Kept;
  } catch {
    /* none yet, or unreadable: a fresh one */
  }
  return null;
}

function writeKept(file: string, kept: Kept): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(kept)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

export interface Dashboard {
  /** http://127.0.0.1:<port>/ — without the token: safe to log. */
  readonly origin: string;
  /** The launch URL with `?token=…`: give it only to the person's browser, never to a log. */
  readonly launchUrl: string;
  readonly port: number;
  /** A single-use launch URL (`?ticket=…`) valid for ttlMs: what `sbx ui` opens; as secret as the token until used. */
  issueLaunch(ttlMs: number): { url: string; ticket: string; expiresAt: number };
  launchState(ticket: string): TicketState;
  close(): Promise<void>;
}

export function startDashboard(opts: DashboardOptions): Dashboard {
  const token = opts.token ?? randomSecret();
  const tickets = new LaunchTickets();
  const kept = readKept(opts.stateFile);
  const sessionKey = kept?.sessionKey ?? randomSecret();
  const app = createDashboardApp({
    source: opts.source,
    token,
    tickets,
    sessionKey,
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.keepAliveMs !== undefined ? { keepAliveMs: opts.keepAliveMs } : {}),
  });
  const serve = (port: number) =>
    Bun.serve({
      hostname: "127.0.0.1",
      port,
      fetch: app.fetch,
      // The feed is a long-lived stream: keep-alive comments come every 15 s, under this limit.
      idleTimeout: 60,
    });
  // The last start's port first, so an open tab finds the dashboard again; another one when that is taken now.
  let server: ReturnType<typeof serve>;
  try {
    server = serve(opts.port ?? kept?.port ?? 0);
  } catch (e) {
    if (opts.port !== undefined || kept === null) throw e;
    opts.log?.warn("ui: the dashboard's last port is taken; open tabs must be opened again (sbx ui)", { port: kept.port });
    server = serve(0);
  }
  const port = server.port!;
  if (opts.stateFile && (kept?.port !== port || kept.sessionKey !== sessionKey)) writeKept(opts.stateFile, { port, sessionKey });
  const origin = `http://127.0.0.1:${port}/`;
  opts.log?.info("ui: dashboard listening", { origin });
  let closed = false;
  return {
    origin,
    launchUrl: `${origin}?token=${encodeURIComponent(token)}`,
    port,
    issueLaunch(ttlMs) {
      const { ticket, expiresAt } = tickets.issue(ttlMs);
      return { url: `${origin}?ticket=${encodeURIComponent(ticket)}`, ticket, expiresAt };
    },
    launchState: (ticket) => tickets.state(ticket),
    async close() {
      if (closed) return;
      closed = true;
      await server.stop(true);
    },
  };
}
