// The chat bot's host-side config (Zulip site, bot email and key, stream, who may give commands): schema, render, and a 0600 file under the config dir (written, read, removed).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { SbxError } from "../core/errors";
import { readPrivateFile, removePrivateFile, writePrivateFile } from "./private-file";

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Zulip topics are at most 60 characters; stream names the same. */
export const ZULIP_NAME_MAX = 60;

export const SiteSchema = z
  .string()
  .trim()
  .transform((s, ctx) => {
    let u: URL;
    try {
      u = new URL(s);
    } catch {
      ctx.addIssue({ code: "custom", message: `'${s}' is not a URL (expected https://your-org.zulipchat.com)` });
      return z.NEVER;
    }
    const loopback = LOOPBACK_HOSTS.has(u.hostname);
    if (u.protocol !== "https:" && !(u.protocol === "http:" && loopback)) {
      ctx.addIssue({ code: "custom", message: `the Zulip site must use https (the bot's API key travels with every request): ${s}` });
      return z.NEVER;
    }
    if (u.username || u.password || u.search || u.hash) {
      ctx.addIssue({ code: "custom", message: "the Zulip site URL takes no credentials, query or fragment" });
      return z.NEVER;
    }
    return `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
  });

export const ZulipConfigSchema = z.object({
  provider: z.literal("zulip").describe("the chat service: zulip"),
  site: SiteSchema.describe("the organisation's https URL, e.g. https://ORG.zulipchat.com"),
  email: z.email({ message: "the bot's email address is not valid" }).describe("the bot's email address (its Zulip login)"),
  apiKey: z
    .string()
    .min(1, "the API key is empty")
    .refine((k) => !/\s/.test(k), "the API key holds whitespace: is the key file the bot's zuliprc rather than the bare key?")
    .describe("the bot's API key (stored 0600; never shown)"),
  stream: z.string().trim().min(1, "name a stream").max(ZULIP_NAME_MAX).describe(`the stream the bot posts to (at most ${ZULIP_NAME_MAX} characters)`),
  allowSenders: z
    .array(z.email().transform((e) => e.toLowerCase()))
    .default([])
    .describe("emails of the people whose commands the bot obeys (default: nobody)"),
});
export type ZulipConfig = z.infer<typeof ZulipConfigSchema>;
export type ChatConfig = ZulipConfig;

export function chatConfigPath(configDir: string): string {
  return join(configDir, "chat.json");
}

/** Pure: the file's text. */
export function renderChatConfig(c: ChatConfig): string {
  return JSON.stringify(ZulipConfigSchema.parse(c), null, 2) + "\n";
}

/** Validates user input into a config; the first problem is a usage error (exit 64) that says what to fix. */
export function buildZulipConfig(input: { site: string; email: string; apiKey: string; stream: string; allowSenders: readonly string[] }): ZulipConfig {
  const r = ZulipConfigSchema.safeParse({ provider: "zulip", ...input, allowSenders: [...input.allowSenders] });
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new SbxError("usage", `chat setup: ${issue.path.join(".") || "config"}: ${issue.message}`, {
      hint: "sbx chat setup zulip --site https://ORG.zulipchat.com --email BOT@ORG.zulipchat.com --key-file FILE --stream STREAM --allow-sender YOU@EXAMPLE.COM",
    });
  }
  return r.data;
}

/** Reads a key from a file: the first line, trimmed. Never echoes it. */
export function readKeyFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new SbxError("not_found", `cannot read the key file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, {
      hint: "Save the bot's API key (Zulip: Personal settings → Bots → the bot's API key) in a file readable only by you, and pass its path.",
    });
  }
  const key = text.split(/\r?\n/)[0]!.trim();
  if (key === "") throw new SbxError("usage", `the key file ${file} is empty`, { hint: "Put the bot's API key on the file's first line." });
  return key;
}

/** Writes the config atomically, mode 0600, in a 0700 directory. */
export function writeChatConfig(configDir: string, c: ChatConfig): string {
  return writePrivateFile(configDir, "chat.json", renderChatConfig(c));
}

/** The stored config, or null when chat was never set up. A file others can read is refused (it holds a key). */
export function readChatConfig(configDir: string): ChatConfig | null {
  const file = chatConfigPath(configDir);
  const text = readPrivateFile(file, "the bot's API key");
  if (text === null) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new SbxError("config", `${file} is not valid JSON`, { hint: "Run `sbx chat setup zulip …` again to rewrite it." });
  }
  const r = ZulipConfigSchema.safeParse(raw);
  if (!r.success) {
    throw new SbxError("config", `${file}: ${r.error.issues[0]?.path.join(".")}: ${r.error.issues[0]?.message}`, {
      hint: "Run `sbx chat setup zulip …` again to rewrite it.",
    });
  }
  return r.data;
}

/** What `sbx chat remove` took away. */
export interface ChatRemoval {
  file: string;
  /** Whether anything was there to remove. */
  removed: boolean;
  /** What the removed file said, without the key; null when there was none or it could not be read. */
  config: Omit<ChatConfig, "apiKey"> | null;
}

/** Removes everything `writeChatConfig` writes (chat.json, and any temp file a crash left), so the key with it. Nothing there is not an error. */
export function removeChatConfig(configDir: string): ChatRemoval {
  const file = chatConfigPath(configDir);
  let config: ChatRemoval["config"] = null;
  try {
    const c = readChatConfig(configDir);
    if (c) {
      const { apiKey: _key, ...rest } = c;
      config = rest;
    }
  } catch {
    /* unreadable (mode, JSON, schema): removed all the same, just not described */
  }
  const removed = removePrivateFile(configDir, "chat.json", "the bot's API key");
  return { file, removed, config: removed ? config : null };
}
