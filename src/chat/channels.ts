// What the daemon starts from approvals.json: the webhook, the Slack app and the listener their answers come back to
// (127.0.0.1 unless the config names another address), and what `sbx status` says of each. A bad config, a port that
// is taken or a receiver that is down is a line in the status and the log, never a daemon that does not start.
import type { DataSource } from "../events/feed";
import { toSbxError } from "../core/errors";
import type { UiLog } from "../ui/app";
import { isLoopbackHost, readApprovalsConfig, type ApprovalsConfig } from "./channels-config";
import { createHooksApp, HOOK_BODY_MAX } from "./hooks-app";
import { DecisionLinks } from "./links";
import type { OutboxStats } from "./outbox";
import { startSlack, type SlackChannel } from "./slack";
import type { Fetch } from "./outbox";
import { startWebhook, type WebhookChannel } from "./webhook";

export type ChannelState = Omit<OutboxStats, "lastError" | "lastErrorAt" | "lastOkAt"> & {
  target: string;
  lastError?: string;
  lastErrorAt?: number;
  lastOkAt?: number;
};

/** What `sbx status` shows (daemon/protocol.ts's ApprovalChannelsSchema is its wire shape). */
export interface ChannelsStatus {
  configured: boolean;
  error?: string;
  listener?: { origin: string; publicUrl?: string; loopbackOnly: boolean } | null;
  listenerError?: string;
  webhook?: ChannelState;
  slack?: ChannelState;
}

export interface ChannelsOptions {
  configDir: string;
  source: DataSource;
  log?: UiLog & { error?(msg: string, fields?: Record<string, unknown>): void };
  fetch?: Fetch;
  now?: () => number;
  /** The config itself (tests); otherwise read from configDir. */
  config?: ApprovalsConfig | null;
}

export interface Channels {
  status(): ChannelsStatus;
  /** Resolves when nothing waits to be sent (tests). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

function stateOf(s: OutboxStats & { target: string }): ChannelState {
  const { lastError, lastErrorAt, lastOkAt, ...rest } = s;
  return { ...rest, ...(lastError !== null ? { lastError } : {}), ...(lastErrorAt !== null ? { lastErrorAt } : {}), ...(lastOkAt !== null ? { lastOkAt } : {}) };
}

/** Pure: `HOST:PORT` → Bun.serve's hostname and port. */
export function splitListen(listen: string): { hostname: string; port: number } {
  const i = listen.lastIndexOf(":");
  return { hostname: listen.slice(0, i).replace(/^\[(.*)\]$/, "$1"), port: Number(listen.slice(i + 1)) };
}

export function startApprovalChannels(o: ChannelsOptions): Channels {
  let config: ApprovalsConfig | null = null;
  try {
    config = o.config !== undefined ? o.config : readApprovalsConfig(o.configDir);
  } catch (e) {
    const err = toSbxError(e);
    o.log?.warn("approval channels not started: bad config", { err: err.message });
    const error = `${err.message}${err.hint ? ` (${err.hint})` : ""}`;
    return { status: () => ({ configured: true, error }), idle: async () => {}, close: async () => {} };
  }
  if (config === null || (!config.webhook && !config.slack)) return { status: () => ({ configured: false }), idle: async () => {}, close: async () => {} };
  const cfg = config;
  const now = o.now ?? Date.now;
  const common = { source: o.source, now, ...(o.log ? { log: o.log } : {}), ...(o.fetch ? { fetch: o.fetch } : {}) };
  const links = cfg.webhook ? new DecisionLinks(cfg.webhook.linkMinutes * 60_000, now) : null;

  const slack: SlackChannel | null = cfg.slack ? startSlack({ config: cfg.slack, ...common }) : null;

  // The listener first: the webhook's payloads carry its address (the public one when there is one).
  const { hostname, port } = splitListen(cfg.listen);
  const loopbackOnly = isLoopbackHost(hostname) || hostname === "localhost";
  let server: ReturnType<typeof Bun.serve> | null = null;
  let listenerError: string | undefined;
  const app = createHooksApp({
    decide: { store: o.source.store, now, ...(o.source.events.publish ? { publish: (e) => o.source.events.publish!(e) } : {}) },
    links,
    webhookSecret: cfg.webhook?.secret ?? null,
    slack,
    hosts: [...(cfg.publicUrl ? [new URL(cfg.publicUrl).hostname] : []), ...(loopbackOnly ? [] : [hostname.includes(":") ? `[${hostname}]` : hostname])],
    basePath: cfg.publicUrl ? new URL(cfg.publicUrl).pathname.replace(/\/+$/, "") : "",
    ...(o.log ? { log: o.log } : {}),
    now,
  });
  try {
    server = Bun.serve({ hostname, port, fetch: app.fetch, maxRequestBodySize: HOOK_BODY_MAX, idleTimeout: 30 });
  } catch (e) {
    listenerError = `cannot listen on ${cfg.listen}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`;
    o.log?.warn("approvals listener not started", { listen: cfg.listen, err: listenerError });
  }
  const origin = server ? `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${server.port}` : null;
  if (server) o.log?.info("approvals listener up", { origin, publicUrl: cfg.publicUrl ?? "none", loopbackOnly });
  const base = cfg.publicUrl ?? origin;

  const webhook: WebhookChannel | null = cfg.webhook ? startWebhook({ config: cfg.webhook, answers: links && base ? { links, base } : null, ...common }) : null;

  return {
    status: () => ({
      configured: true,
      listener: origin ? { origin, ...(cfg.publicUrl ? { publicUrl: cfg.publicUrl } : {}), loopbackOnly } : null,
      ...(listenerError ? { listenerError } : {}),
      ...(webhook ? { webhook: stateOf(webhook.stats()) } : {}),
      ...(slack ? { slack: stateOf(slack.stats()) } : {}),
    }),
    async idle() {
      await Promise.all([webhook?.idle(), slack?.idle()]);
    },
    async close() {
      await Promise.allSettled([webhook?.close(), slack?.close(), server?.stop(true)]);
    },
  };
}
