// Chat commands over the store: topic ↔ sandbox, sender check, /allow /deny /allowlist /status /help, and the reply text for each.
import { basename } from "node:path";
import { parseChatCommand } from "../core/chat-commands";
import { describeSubject } from "../core/bridge-settings";
import { BUILTIN_ALLOWLIST, patternFor } from "../core/egress";
import { isSbxError } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import type { Store } from "../store/store";
import { stateFrom, type FeedEvent } from "../events/feed";
import type { SandboxState } from "../core/sandbox-state";
import { PolicyService } from "../policy/service";
import { termText, type AllowTerm } from "../core/allow-term";
import { ZULIP_NAME_MAX } from "./config";

/** Pure: the topic a sandbox's notifications go to, `<name> · <repo dir>` (at most 60 characters). */
export function topicFor(sb: Pick<Sandbox, "name" | "repo">): string {
  const full = `${sb.name} · ${basename(sb.repo)}`;
  return full.length <= ZULIP_NAME_MAX ? full : `${full.slice(0, ZULIP_NAME_MAX - 1)}…`;
}

/** The live sandbox a topic names: its notification topic, or its bare name when that is unambiguous. Zulip topics are case-insensitive. */
export function sandboxForTopic(store: Store, topic: string): Sandbox | null {
  const t = topic.trim().toLowerCase();
  const live = store.listSandboxes();
  const exact = live.filter((s) => topicFor(s).toLowerCase() === t);
  if (exact.length === 1) return exact[0]!;
  const byName = live.filter((s) => s.name === t);
  return byName.length === 1 ? byName[0]! : null;
}

export interface IncomingChat {
  senderEmail: string;
  senderName: string;
  topic: string;
  content: string;
}

export interface CommandContext {
  store: Store;
  /** Lower-cased emails whose commands are obeyed. */
  allowSenders: readonly string[];
  /** Recorded as who decided (`zulip`). */
  source: string;
  publish?: (e: FeedEvent) => void;
  now?: () => number;
  /** A sandbox's state in sbx's one word (the daemon's view); without it, what the store alone tells. */
  stateOf?: (sb: Sandbox) => SandboxState;
}

const HELP = [
  "In a sandbox's topic:",
  "- `/allow <domain>` — allow it for this sandbox (the next request passes)",
  "- `/allow <domain> --global` — allow it for every sandbox",
  "- `/allow <domain> --for 30m` (or `--once`) — for a time, or one connection; it lapses by itself",
  "- `/deny <domain>` — keep it blocked (and take it off this sandbox's list)",
  "- `/allowlist` — what this sandbox may reach",
  "- `/approve <id>` / `/reject <id>` — answer what the sandbox asked for (a push outside its branches, another repository)",
  "- `/approve <id> for 30m` / `/approve <id> once` — a host for a time, or its next connection only",
  "- `/status` — this sandbox and what it is waiting for",
].join("\n");

const HEADS = new Set(["/allow", "/deny", "/allowlist", "/approve", "/reject", "/status", "/help"]);

/** A message's command text: leading @-mentions of the bot dropped. null when it is ordinary chat. */
export function commandText(content: string): string | null {
  const text = content.replace(/^(\s*@_?\*\*[^*]+\*\*)+/, "").trim();
  const head = text.split(/\s+/, 1)[0]?.toLowerCase() ?? "";
  return HEADS.has(head) ? text : null;
}

function code(s: string): string {
  return "`" + s.replace(/`/g, "'") + "`";
}

function ago(ms: number, now: number): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

function noSandbox(topic: string): string {
  return `This topic (${code(topic)}) does not name a sandbox, so I do not know which one you mean. Answer in the topic sbx posted the blocked request in, or add \`--global\` to change every sandbox's list.`;
}

/**
 * The reply to one chat message, or null when it is not a command (ordinary chat is left alone).
 * Commands from senders not in the config are refused politely and change nothing.
 */
export function handleChat(ctx: CommandContext, m: IncomingChat): string | null {
  const text = commandText(m.content);
  if (text === null) return null;
  const mention = m.senderName ? `@_**${m.senderName.replace(/\*/g, "")}**` : m.senderEmail;
  if (!ctx.allowSenders.includes(m.senderEmail.toLowerCase())) {
    return `Sorry ${mention}, I only take sbx commands from the people its owner has listed, so I have not changed anything. The owner can add you with \`sbx chat setup zulip … --allow-sender <your email>\`.`;
  }
  const head = text.split(/\s+/, 1)[0]!.toLowerCase();
  const now = (ctx.now ?? Date.now)();
  const sandbox = sandboxForTopic(ctx.store, m.topic);
  const by = `${ctx.source}:${m.senderEmail.toLowerCase()}`;
  const policy = new PolicyService({ store: ctx.store, ...(ctx.publish ? { publish: ctx.publish } : {}), now: () => now });

  if (head === "/help") return HELP;
  if (head === "/status") return sandbox ? status(ctx, sandbox, now) : overview(ctx);

  const parsed = parseChatCommand(text);
  if (parsed === null) return null;
  if (!parsed.ok) return `I could not read that: ${parsed.error}`;
  const cmd = parsed.command;
  if (cmd.op === "list") return allowlistText(ctx.store, sandbox);
  if (cmd.op === "decide") return decideText(ctx.store, policy, sandbox, m.topic, cmd, by);
  const scopeSandbox = cmd.scope === "global" ? null : sandbox;
  if (cmd.scope === "sandbox" && sandbox === null) return noSandbox(m.topic);
  const where = scopeSandbox ? `sandbox **${scopeSandbox.name}**` : "**every sandbox** (global list)";
  try {
    if (cmd.op === "allow") {
      const results = policy.allow(scopeSandbox ? { kind: "sandbox", sandbox: scopeSandbox } : { kind: "global" }, cmd.patterns, by, cmd.term);
      const answered = results.reduce((n, r) => n + r.resolved.length, 0);
      const lasting = cmd.term ? ` ${termText(cmd.term)}` : "";
      const lines = results.map((r) => `${r.changed ? "Allowed" : "Already allowed:"} ${code(r.pattern)} for ${where}${r.changed ? lasting : ""}.`);
      lines.push(answered ? `The next request goes through without a restart (${answered} pending request${answered === 1 ? "" : "s"} answered).` : "The next request goes through without a restart.");
      return lines.join("\n");
    }
    const results = policy.deny(scopeSandbox ? { kind: "sandbox", sandbox: scopeSandbox } : { kind: "global" }, cmd.patterns, by);
    return results
      .map((r) =>
        r.changed
          ? `Denied ${code(r.pattern)}: removed from the list of ${where}; requests to it are refused again.`
          : `Denied ${code(r.pattern)} for ${where}: it stays blocked${r.resolved.length ? ` (${r.resolved.length} pending request${r.resolved.length === 1 ? "" : "s"} answered)` : ""}.`,
      )
      .join("\n");
  } catch (e) {
    if (isSbxError(e)) return `I could not do that: ${e.message}${e.hint ? `\n${e.hint}` : ""}`;
    throw e;
  }
}

function list(patterns: readonly string[]): string {
  return patterns.length ? patterns.map((p) => `- ${code(p)}`).join("\n") : "- (none)";
}

export function allowlistText(store: Store, sandbox: Sandbox | null): string {
  const parts: string[] = [];
  if (sandbox) parts.push(`**Sandbox ${sandbox.name}:**\n${list(store.listAllow(sandbox.id).map((e) => e.pattern))}`);
  parts.push(`**Global (every sandbox):**\n${list(store.listAllow(null).map((e) => e.pattern))}`);
  parts.push(`**Built in:**\n${list(BUILTIN_ALLOWLIST)}`);
  return parts.join("\n\n");
}

function status(ctx: CommandContext, sb: Sandbox, now: number): string {
  const { store } = ctx;
  const pending = store.listApprovals({ state: "pending", sandboxId: sb.id });
  const last = Math.max(store.listAudit({ sandboxId: sb.id, limit: 1 })[0]?.ts ?? 0, sb.lastUsedAt ?? sb.updatedAt);
  const lines = [
    `**${sb.name}** is **${stateFrom(ctx, sb)}** (${sb.backend}), repo ${code(sb.repo)}, created ${ago(sb.createdAt, now)} ago, last activity ${ago(last, now)} ago.`,
    `Its own allowlist has ${store.listAllow(sb.id).length} entr${store.listAllow(sb.id).length === 1 ? "y" : "ies"}.`,
  ];
  if (pending.length === 0) lines.push("Nothing is waiting for an answer.");
  else {
    lines.push(`Waiting for an answer (${pending.length}):`);
    for (const a of pending) {
      const what = a.kind === "bridge" ? `${describeSubject(a.host)} — \`/approve ${a.id}\`` : a.kind === "budget" ? `more ${code(a.host)} — \`/approve ${a.id}\`` : code(patternFor(a.host, a.port));
      lines.push(`- ${what} — ${a.count}×, last ${ago(a.lastSeen, now)} ago`);
    }
  }
  return lines.join("\n");
}

function overview(ctx: CommandContext): string {
  const { store } = ctx;
  const sandboxes = store.listSandboxes();
  if (sandboxes.length === 0) return "There are no sandboxes.";
  const pending = store.listApprovals({ state: "pending" });
  return [
    "This topic does not name a sandbox; here are all of them:",
    ...sandboxes.map((s) => {
      const n = pending.filter((a) => a.sandboxId === s.id).length;
      return `- **${s.name}** (${stateFrom(ctx, s)}) — ${n} pending — topic ${code(topicFor(s))}`;
    }),
  ].join("\n");
}

/**
 * `/approve N` or `/reject N`: one pending approval, answered for its own sandbox. In a sandbox's topic only that
 * sandbox's approvals are taken (an id typed in the wrong topic changes nothing).
 */
function decideText(store: Store, policy: PolicyService, sandbox: Sandbox | null, topic: string, cmd: { id: number; allow: boolean; term?: AllowTerm }, by: string): string {
  const a = store.listApprovals({ state: "pending" }).find((x) => x.id === cmd.id);
  if (!a) return `There is no pending approval ${cmd.id}: it may have been answered already. \`/status\` lists what is waiting.`;
  if (sandbox === null) return noSandbox(topic);
  if (a.sandboxId !== sandbox.id) return `Approval ${cmd.id} is not this sandbox's (**${sandbox.name}**): answer it in its own sandbox's topic. Nothing changed.`;
  const what = a.kind === "bridge" ? describeSubject(a.host) : a.kind === "budget" ? `more ${code(a.host)}` : code(`${a.host}:${a.port}`);
  try {
    policy.decide(cmd.id, cmd.allow ? "allow-sandbox" : "deny", by, cmd.term);
  } catch (e) {
    if (isSbxError(e)) return `Not done: ${e.message}`;
    throw e;
  }
  return cmd.allow
    ? `Approved for **${sandbox.name}**${cmd.term ? ` ${termText(cmd.term)}` : ""}: ${what}. Its next try goes through.`
    : `Rejected for **${sandbox.name}**: ${what}. It stays refused.`;
}

/** The notification posted when the bridge refuses a sandbox something the user can approve (once per approval). */
export function bridgeNotice(e: Extract<FeedEvent, { kind: "bridge" }>, subject: string): string {
  return [
    `✋ **${e.sandbox.name}** asks to ${describeSubject(subject)} (${code(e.command.slice(0, 4).join(" "))}).`,
    `Reply here with \`/approve ${e.approvalId}\` to allow it for this sandbox, or \`/reject ${e.approvalId}\`.`,
  ].join("\n");
}

/** The notification posted when a sandbox reaches its LLM budget (once per approval). */
export function budgetNotice(e: Extract<FeedEvent, { kind: "llm" }>): string {
  return [
    `💸 **${e.sandbox.name}** has spent its LLM budget${e.detail ? `: ${e.detail}` : ""}; its model calls are refused.`,
    `Reply here with \`/approve ${e.approvalId}\` to give it one more budget's worth for today, or \`/reject ${e.approvalId}\`.`,
  ].join("\n");
}

/** The notification posted when a sandbox is refused a host it has not asked for before. */
export function blockedNotice(e: Extract<FeedEvent, { kind: "egress" }>): string {
  if (e.reason === "blocked-raw") {
    // Dropped by the firewall, not refused by the proxy: there is nothing to /allow (an allowlist entry would not let
    // a raw connection out); say what happened and where to look.
    return [
      `🚫 **${e.sandbox.name}** tried to connect around its proxy: ${code(`${e.method} ${e.host}:${e.port}`)} was dropped by the firewall.`,
      `Only traffic through the sbx proxy leaves a sandbox; \`sbx logs --sandbox ${e.sandbox.name}\` lists these attempts.`,
    ].join("\n");
  }
  const pattern = e.suggest ?? patternFor(e.host, e.port);
  return [
    `🚫 **${e.sandbox.name}** was refused ${code(`${e.host}:${e.port}`)}${e.reason ? ` (${e.reason})` : ""}.`,
    `Reply here with \`/allow ${pattern}\` to allow it for this sandbox, \`/allow ${pattern} --global\` for every sandbox, or \`/deny ${pattern}\`.`,
  ].join("\n");
}
