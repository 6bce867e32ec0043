// What the daemon hosts besides guards: the approvals dashboard (127.0.0.1, random port), the Zulip bot when chat is set up, the webhook and Slack channels with their listener, and desktop notifications, all fed by one event bus.
import { readChatConfig, type ChatConfig } from "../chat/config";
import { startZulipBot, type ZulipBot } from "../chat/bot";
import { startApprovalChannels, type Channels, type ChannelsStatus } from "../chat/channels";
import { SbxError, toSbxError } from "../core/errors";
import type { SandboxState } from "../core/sandbox-state";
import type { SpendView } from "../core/llm-budget";
import type { Sandbox } from "../core/schemas";
import type { Store } from "../store/store";
import type { Exec } from "../sys/exec";
import type { EventBus } from "../events/feed";
import { startDashboard, type Dashboard } from "../ui/server";
import type { TicketState } from "../ui/auth";
import type { Logger } from "../sys/log";
import { createDesktopNotifier, type DesktopNotifier } from "./notify";
import type { ChatStatus, UiLaunch } from "./protocol";

export interface HostedDeps {
  store: Store;
  /** Each sandbox's state in sbx's one word, as the daemon sees it (the dashboard and chat show it). */
  stateOf?: (sb: Sandbox) => SandboxState;
  /** Each sandbox's LLM spend (the dashboard shows it). */
  spendOf?: (sb: Sandbox) => SpendView;
  events: EventBus;
  log: Logger;
  exec: Exec;
  configDir: string;
  /** Where the dashboard keeps its port and session key across restarts (`<state>/dashboard.json`). */
  dashboardState?: string;
  platform: NodeJS.Platform;
  /** Seams for tests. */
  dashboard?: boolean;
  notifications?: boolean;
  startBot?: (config: ChatConfig) => ZulipBot;
  /**
   * The chat bot's, the webhook's and Slack's outgoing requests: the daemon's, through the host's parent proxy where
   * it applies (sys/parent.ts `parentFetch`; Bun's own fetch reads only the environment's proxy, never the config's);
   * tests give their own. None: Bun's fetch.
   */
  fetch?: (input: string, init?: RequestInit) => Promise<Response>;
}

export interface Hosted {
  /** The dashboard's origin (no token: safe to show and log), or null when it is not running. */
  uiOrigin(): string | null;
  /** A single-use launch URL for `sbx ui`; throws when there is no dashboard. */
  launch(ttlMs: number): UiLaunch;
  ticketState(ticket: string): TicketState;
  chat(): ChatStatus;
  /** The webhook, Slack and their listener (approvals.json). */
  channels(): ChannelsStatus;
  /** Stops the bot (if any) and starts one for the current chat.json (after `sbx chat setup`); the same for approvals.json. */
  reloadChat(): Promise<ChatStatus>;
  readonly notifier: DesktopNotifier | null;
  close(): Promise<void>;
}

export function startHosted(deps: HostedDeps): Hosted {
  const { log, store, events } = deps;
  const source = { store, events, ...(deps.stateOf ? { stateOf: deps.stateOf } : {}), ...(deps.spendOf ? { spendOf: deps.spendOf } : {}) };
  let dash: Dashboard | null = null;
  if (deps.dashboard !== false) {
    try {
      // The dashboard logs its origin only; its token stays in this process (sbx ui gets single-use tickets).
      dash = startDashboard({ source, log: log.with({ part: "ui" }), ...(deps.dashboardState ? { stateFile: deps.dashboardState } : {}) });
    } catch (e) {
      log.error("dashboard failed to start", { err: toSbxError(e).message });
    }
  }

  let chat: ChatStatus = { configured: false, connected: false };
  let bot: ZulipBot | null = null;
  /** (Re)reads chat.json and starts a bot for it; a bad config is reported in the status, never fatal. */
  const startChat = () => {
    chat = { configured: false, connected: false };
    let config: ChatConfig | null = null;
    try {
      config = readChatConfig(deps.configDir);
    } catch (e) {
      const err = toSbxError(e);
      chat = { configured: true, connected: false, error: `${err.message}${err.hint ? ` (${err.hint})` : ""}` };
      log.error("chat bot not started: bad config", { err: err.message });
    }
    if (!config) return;
    chat = { configured: true, connected: false, provider: config.provider, site: config.site, stream: config.stream };
    try {
      bot = (deps.startBot ?? ((c) => startZulipBot({ config: c, source, log: log.with({ part: "chat" }), ...(deps.fetch ? { fetch: deps.fetch } : {}) })))(config);
      log.info("chat bot started", { provider: config.provider, site: config.site, stream: config.stream });
    } catch (e) {
      chat = { ...chat, error: toSbxError(e).message };
      log.error("chat bot failed to start", { err: toSbxError(e).message });
    }
  };
  startChat();
  const chatStatus = (): ChatStatus => {
    if (!bot) return chat;
    const s = bot.state();
    return { ...chat, connected: s.connected, ...(s.lastError ? { error: s.lastError } : {}) };
  };

  // The webhook and Slack (approvals.json): a bad config or a taken port is said in the status, never fatal.
  const startChannels = () => startApprovalChannels({ configDir: deps.configDir, source, log: log.with({ part: "approvals" }), ...(deps.fetch ? { fetch: deps.fetch } : {}) });
  let channels: Channels = startChannels();

  let notifier: DesktopNotifier | null = null;
  let unsubscribe = () => {};
  if (deps.notifications !== false) {
    const n = createDesktopNotifier({ exec: deps.exec, platform: deps.platform, log });
    notifier = n;
    unsubscribe = events.subscribe((e) => n.onEvent(e));
  }

  return {
    notifier,
    uiOrigin: () => dash?.origin ?? null,
    launch(ttlMs) {
      if (!dash) throw new SbxError("unavailable", "the daemon's dashboard is not running", { hint: "See the daemon log (`sbx status` shows its path) for why it did not start." });
      const l = dash.issueLaunch(ttlMs);
      return { origin: dash.origin, url: l.url, ticket: l.ticket, expiresAt: l.expiresAt };
    },
    ticketState: (ticket) => dash?.launchState(ticket) ?? "unknown",
    chat: chatStatus,
    channels: () => channels.status(),
    async reloadChat() {
      const old = bot;
      bot = null;
      await old?.close();
      startChat();
      await channels.close();
      channels = startChannels();
      return chatStatus();
    },
    async close() {
      unsubscribe();
      await Promise.allSettled([bot?.close(), dash?.close(), notifier?.idle(), channels.close()]);
    },
  };
}
