// `sbx chat setup webhook|slack`: reads the secrets from files (never from argv), merges the channel into approvals.json
// (the other channel and the listener settings kept), checks it with the service first (Slack: auth.test, refused when
// the token is; a webhook: one signed `ping`, whose failure is said but saves all the same: its receiver may come later).
import { readFileSync } from "node:fs";
import { SbxError } from "../core/errors";
import { approvalsConfigPath, buildApprovalsConfig, readApprovalsConfig, shownUrl, writeApprovalsConfig, type ApprovalsConfig, type ApprovalsInput } from "./channels-config";
import type { Fetch } from "./outbox";
import { postSigned } from "./post";
import { SlackClient, SlackError } from "./slack-api";

export const WEBHOOK_USAGE = "sbx chat setup webhook --url https://HOOKS.EXAMPLE/sbx --secret-file FILE [--public-url https://SBX.EXAMPLE] [--listen 127.0.0.1:8750]";
export const SLACK_USAGE =
  "sbx chat setup slack --token-file FILE --signing-secret-file FILE --channel C0123456789 --allow-user U0123456789 --public-url https://SBX.EXAMPLE [--listen 127.0.0.1:8750]";

/** A secret from a file: its first line, trimmed; never echoed. */
export function readSecretFile(file: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new SbxError("not_found", `cannot read ${what} from ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, {
      hint: `Save ${what} in a file only you can read (chmod 600), and pass its path.`,
    });
  }
  const v = text.split(/\r?\n/)[0]!.trim();
  if (v === "") throw new SbxError("usage", `${file} is empty`, { hint: `Put ${what} on the file's first line.` });
  return v;
}

/** The stored config to build on: the current one, or nothing when there is none or it cannot be read (it is rewritten). */
function current(configDir: string): Partial<ApprovalsConfig> {
  try {
    return readApprovalsConfig(configDir) ?? {};
  } catch {
    return {};
  }
}

function listenerPart(cur: Partial<ApprovalsConfig>, input: { publicUrl?: string | undefined; listen?: string | undefined }): Pick<ApprovalsInput, "listen" | "publicUrl"> {
  const publicUrl = input.publicUrl ?? cur.publicUrl;
  const listen = input.listen ?? cur.listen;
  return { ...(publicUrl !== undefined ? { publicUrl } : {}), ...(listen !== undefined ? { listen } : {}) };
}

export interface WebhookSetupInput {
  url: string;
  secretFile: string;
  publicUrl?: string | undefined;
  listen?: string | undefined;
}

/** Writes the webhook into approvals.json after one signed ping; returns the file, the config and what the ping got. */
export async function setupWebhook(configDir: string, input: WebhookSetupInput, opts: { fetch?: Fetch; timeoutMs?: number } = {}): Promise<{ file: string; config: ApprovalsConfig; ping: string | null }> {
  const cur = current(configDir);
  const config = buildApprovalsConfig(
    { ...cur, ...listenerPart(cur, input), webhook: { url: input.url, secret: readSecretFile(input.secretFile, "the webhook's signing secret") } },
    WEBHOOK_USAGE,
  );
  const hook = config.webhook!;
  let ping: string | null = null;
  try {
    const body = JSON.stringify({ type: "ping", at: Date.now(), note: "sbx chat setup webhook: a test delivery, signed as approvals will be" });
    await postSigned(opts.fetch ?? ((u, i) => fetch(u, i)), hook.url, hook.secret, "ping", crypto.randomUUID(), body, AbortSignal.timeout(opts.timeoutMs ?? hook.timeoutMs), Date.now());
  } catch (e) {
    ping = (e as Error).name === "TimeoutError" ? `no answer from ${shownUrl(hook.url)} within ${opts.timeoutMs ?? hook.timeoutMs} ms` : (e as Error).message;
  }
  return { file: writeApprovalsConfig(configDir, config), config, ping };
}

export interface SlackSetupInput {
  tokenFile: string;
  signingSecretFile: string;
  channel: string;
  allowUsers: readonly string[];
  publicUrl?: string | undefined;
  listen?: string | undefined;
  /** Slack's Web API base (tests: a fake on loopback). */
  apiBase?: string | undefined;
}

/** Checks the bot token with auth.test, then writes Slack into approvals.json; a refused token saves nothing. */
export async function setupSlack(configDir: string, input: SlackSetupInput, opts: { fetch?: Fetch; timeoutMs?: number } = {}): Promise<{ file: string; config: ApprovalsConfig; team: string; bot: string }> {
  const cur = current(configDir);
  const config = buildApprovalsConfig(
    {
      ...cur,
      ...listenerPart(cur, input),
      slack: {
        botToken: readSecretFile(input.tokenFile, "the Slack bot token"),
        signingSecret: readSecretFile(input.signingSecretFile, "the Slack signing secret"),
        channel: input.channel,
        allowUsers: [...input.allowUsers],
        ...(input.apiBase ? { apiBase: input.apiBase } : {}),
      },
    },
    SLACK_USAGE,
  );
  const slack = config.slack!;
  let me: Awaited<ReturnType<SlackClient["authTest"]>>;
  try {
    me = await new SlackClient(slack, opts.fetch ? { fetch: opts.fetch } : {}).authTest(AbortSignal.timeout(opts.timeoutMs ?? 10_000));
  } catch (e) {
    if (e instanceof SlackError && /auth|token|inactive/.test(e.code)) {
      throw new SbxError("permission", `Slack refused the bot token (${e.code})`, {
        hint: "Give the app's Bot User OAuth Token (xoxb-…, OAuth & Permissions), installed in the workspace. Nothing was saved.",
      });
    }
    const why = (e as Error).name === "TimeoutError" ? "no answer" : (e as Error).message;
    throw new SbxError("unavailable", `cannot check the token with Slack at ${slack.apiBase}: ${why}`, { hint: "Check that this machine reaches Slack. Nothing was saved." });
  }
  return { file: writeApprovalsConfig(configDir, config), config, team: me.team, bot: me.user };
}

export { approvalsConfigPath };
