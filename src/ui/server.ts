// Serves the dashboard with Bun.serve on 127.0.0.1 at a port chosen at start; returns the launch URL (which holds the token) and close().
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
  const app = createDashboardApp({
    source: opts.source,
    token,
    tickets,
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.keepAliveMs !== undefined ? { keepAliveMs: opts.keepAliveMs } : {}),
  });
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: opts.port ?? 0,
    fetch: app.fetch,
    // The feed is a long-lived stream: keep-alive comments come every 15 s, under this limit.
    idleTimeout: 60,
  });
  const port = server.port!;
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
