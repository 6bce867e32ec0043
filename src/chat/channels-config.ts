// Where approvals go besides the dashboard and Zulip: a signed webhook and a Slack app, and the daemon's listener for
// the answers (one-time links, signed decisions, Slack's button clicks). Kept 0600 in <config dir>/approvals.json,
// secrets included (the webhook's signing secret, the Slack bot token and signing secret); never shown, never logged.
import { z } from "zod";
import { SbxError } from "../core/errors";
import { readPrivateFile, removePrivateFile, writePrivateFile } from "./private-file";

export const APPROVALS_FILE = "approvals.json";
/** The listener's address when the config names none: loopback only, a fixed port (a tunnel or proxy points at it). */
export const DEFAULT_LISTEN = "127.0.0.1:8750";

const LOOPBACK_NAMES = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

/** Pure: whether a URL's host is this machine's loopback (where plain http is acceptable: nothing crosses a network). */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_NAMES.has(hostname) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** An https URL (http only to loopback), with no credentials or fragment; `query` says whether it may have a query. */
function urlSchema(what: string, query: boolean) {
  return z
    .string()
    .trim()
    .transform((s, ctx) => {
      let u: URL;
      try {
        u = new URL(s);
      } catch {
        ctx.addIssue({ code: "custom", message: `'${s}' is not a URL` });
        return z.NEVER;
      }
      if (u.protocol !== "https:" && !(u.protocol === "http:" && isLoopbackHost(u.hostname))) {
        ctx.addIssue({ code: "custom", message: `${what} must use https (it carries approvals and their answers): ${u.origin}` });
        return z.NEVER;
      }
      if (u.username || u.password || u.hash || (!query && u.search)) {
        ctx.addIssue({ code: "custom", message: `${what} takes no credentials${query ? "" : ", query"} or fragment` });
        return z.NEVER;
      }
      return query ? u.href : `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
    });
}

/** `HOST:PORT` the listener binds: an IP literal or localhost, a port (0: any free one, for tests). */
export const ListenSchema = z
  .string()
  .trim()
  .regex(/^(localhost|\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]):\d{1,5}$/, "give the listener as HOST:PORT, HOST an IP address or localhost (e.g. 127.0.0.1:8750)")
  .refine((s) => Number(s.slice(s.lastIndexOf(":") + 1)) <= 65535, "the port is at most 65535");

/** A secret read from a file: long enough to be one, one line, no spaces. */
const secretSchema = (what: string, min: number) =>
  z
    .string()
    .min(min, `${what} is shorter than ${min} characters: make a long random one (openssl rand -hex 32)`)
    .refine((s) => !/\s/.test(s), `${what} holds whitespace`);

export const WebhookConfigSchema = z.object({
  url: urlSchema("the webhook URL", true).describe("where each pending approval is POSTed (https)"),
  secret: secretSchema("the webhook's signing secret", 32).describe("signs deliveries and checks signed decisions (never shown)"),
  timeoutMs: z.number().int().min(500).max(30_000).default(5000).describe("how long one delivery attempt may take"),
  linkMinutes: z.number().int().min(1).max(24 * 60).default(60).describe("how long a one-time decision link stays valid"),
});
export type WebhookConfig = z.infer<typeof WebhookConfigSchema>;

export const SlackConfigSchema = z.object({
  botToken: z.string().regex(/^xoxb-[A-Za-z0-9-]{10,}$/, "a Slack bot token starts with xoxb- (OAuth & Permissions → Bot User OAuth Token)"),
  signingSecret: secretSchema("the Slack signing secret", 16),
  channel: z.string().regex(/^[CG][A-Z0-9]{6,}$/, "give the channel's ID (C…): in Slack, open the channel's details; the ID is at the bottom of About"),
  allowUsers: z
    .array(z.string().regex(/^[UW][A-Z0-9]{6,}$/, "a Slack member ID (U…): a profile's ⋮ menu → Copy member ID"))
    .default([])
    .describe("member IDs whose button clicks are obeyed (default: nobody)"),
  apiBase: urlSchema("the Slack API URL", false).default("https://slack.com/api"),
  timeoutMs: z.number().int().min(500).max(30_000).default(5000),
});
export type SlackConfig = z.infer<typeof SlackConfigSchema>;

export const ApprovalsConfigSchema = z
  .object({
    listen: ListenSchema.default(DEFAULT_LISTEN),
    publicUrl: urlSchema("the public URL", false).optional(),
    webhook: WebhookConfigSchema.optional(),
    slack: SlackConfigSchema.optional(),
  })
  .refine((c) => !c.slack || c.publicUrl !== undefined, {
    message: "Slack sends button clicks to <public URL>/hooks/slack/interact: give the https address a tunnel or reverse proxy serves the listener at (--public-url)",
    path: ["publicUrl"],
  });
export type ApprovalsConfig = z.infer<typeof ApprovalsConfigSchema>;
export type ApprovalsInput = z.input<typeof ApprovalsConfigSchema>;

export function approvalsConfigPath(configDir: string): string {
  return `${configDir.replace(/\/+$/, "")}/${APPROVALS_FILE}`;
}

/** Validates into a config; the first problem is a usage error (exit 64) that says what to fix. */
export function buildApprovalsConfig(input: ApprovalsInput, hint: string): ApprovalsConfig {
  const r = ApprovalsConfigSchema.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new SbxError("usage", `chat setup: ${issue.path.join(".") || "config"}: ${issue.message}`, { hint });
  }
  return r.data;
}

export function writeApprovalsConfig(configDir: string, c: ApprovalsConfig): string {
  return writePrivateFile(configDir, APPROVALS_FILE, JSON.stringify(ApprovalsConfigSchema.parse(c), null, 2) + "\n");
}

/** The stored config, or null when neither a webhook nor Slack was set up. */
export function readApprovalsConfig(configDir: string): ApprovalsConfig | null {
  const file = approvalsConfigPath(configDir);
  const text = readPrivateFile(file, "the webhook's and Slack's secrets");
  if (text === null) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new SbxError("config", `${file} is not valid JSON`, { hint: "Run `sbx chat setup webhook …` or `sbx chat setup slack …` again to rewrite it." });
  }
  const r = ApprovalsConfigSchema.safeParse(raw);
  if (!r.success) {
    throw new SbxError("config", `${file}: ${r.error.issues[0]?.path.join(".")}: ${r.error.issues[0]?.message}`, {
      hint: "Run `sbx chat setup webhook …` or `sbx chat setup slack …` again to rewrite it.",
    });
  }
  return r.data;
}

/** Pure: a URL as it may be shown or logged: its query (which may hold a key) elided. */
export function shownUrl(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}${u.search ? "?…" : ""}`;
}

/** Pure: the config without a secret in it (`sbx chat show`). */
export function shownApprovals(c: ApprovalsConfig) {
  return {
    listen: c.listen,
    ...(c.publicUrl ? { publicUrl: c.publicUrl } : {}),
    ...(c.webhook ? { webhook: { url: shownUrl(c.webhook.url), timeoutMs: c.webhook.timeoutMs, linkMinutes: c.webhook.linkMinutes } } : {}),
    ...(c.slack ? { slack: { channel: c.slack.channel, allowUsers: c.slack.allowUsers, apiBase: c.slack.apiBase } } : {}),
  };
}

/**
 * Takes a channel (or both) out of the config: the file is rewritten without it, or removed when nothing is left.
 * Whether that channel was there.
 */
export function removeApprovalsChannel(configDir: string, which: "webhook" | "slack" | "all"): boolean {
  let cur: ApprovalsConfig | null = null;
  try {
    cur = readApprovalsConfig(configDir);
  } catch {
    /* unreadable: removed whole below */
  }
  if (which === "all" || cur === null) return removePrivateFile(configDir, APPROVALS_FILE, "the webhook's and Slack's secrets");
  if (cur[which] === undefined) return false;
  const rest: ApprovalsConfig = { ...cur, [which]: undefined };
  delete rest[which];
  if (rest.webhook === undefined && rest.slack === undefined) removePrivateFile(configDir, APPROVALS_FILE, "the webhook's and Slack's secrets");
  else writeApprovalsConfig(configDir, ApprovalsConfigSchema.parse(rest));
  return true;
}
