// sbx chat: store the Zulip bot's config host-side once the server accepts its key (setup), show it without the key, remove it, and have the daemon (which hosts the bot) pick it up; the same for the webhook and Slack (approvals.json).
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { CliContext, Verb } from "../verb";
import type { DaemonClient } from "../../client/client";
import type { ChatStatus } from "../../daemon/protocol";

const USAGE_HINT =
  "sbx chat setup zulip --site https://ORG.zulipchat.com --email BOT@ORG.zulipchat.com --key-file FILE --stream STREAM --allow-sender YOU@EXAMPLE.COM";

export const chat: Verb = {
  name: "chat",
  summary: "set up approvals in chat (Zulip, Slack) or a signed webhook",
  declare(cmd: Command) {
    cmd
      .argument("<action>", "setup | show | remove | reload")
      .argument("[provider]", "zulip | slack | webhook")
      .option("--site <url>", "the Zulip organisation's URL (https)")
      .option("--email <address>", "the bot's email address")
      .option("--key-file <file>", "a file holding the bot's API key (never pass the key itself)")
      .option("--stream <name>", "the stream the bot posts to and listens in")
      .option("--allow-sender <email...>", "people whose /allow and /deny the bot obeys (repeatable)")
      .option("--url <url>", "webhook: where each pending approval is POSTed (https)")
      .option("--secret-file <file>", "webhook: a file holding the signing secret (32+ characters: openssl rand -hex 32)")
      .option("--token-file <file>", "slack: a file holding the app's bot token (xoxb-…)")
      .option("--signing-secret-file <file>", "slack: a file holding the app's signing secret")
      .option("--channel <id>", "slack: the channel's ID (C…) the app posts to")
      .option("--allow-user <id...>", "slack: member IDs (U…) whose button clicks are obeyed (repeatable)")
      .option("--public-url <url>", "webhook, slack: the https address a tunnel or reverse proxy serves the approvals listener at")
      .option("--listen <host:port>", "webhook, slack: where the approvals listener binds (default 127.0.0.1:8750)")
      .option("--api-base <url>", "slack: the Web API's base URL (default https://slack.com/api)")
      .option("--json", "print JSON (show, remove)")
      .addHelpText(
        "after",
        `
  setup zulip   checks the key with the server (GET /api/v1/users/me as the bot), then writes the bot's
                config, key included, to <config dir>/chat.json (mode 0600); the key is read from --key-file.
                A key the server refuses, a bot of another organisation, or a server that does not answer
                is refused (exit 77, 78 or 69) and nothing is saved
  show          prints the configs without a key, a secret or a webhook URL's query
  remove [P]    deletes chat.json and approvals.json and so the keys in them (rm works too), or only provider P's;
                a running daemon stops them at once. With nothing set up it says so and exits 0. The key stays valid
                on Zulip (a token on Slack) until you make a new one
  reload        makes the daemon restart its bot with the current config (setup and remove do this when a daemon runs)

  setup webhook POSTs each pending approval to --url, signed with the secret (X-Sbx-Signature: v1=HMAC-SHA256 over
                "v1:<X-Sbx-Timestamp>:<body>"), with a one-time link and a signed API to answer it: sbx help chat-setup
  setup slack   checks the token (auth.test), then posts each pending approval to --channel with Allow / Deny buttons;
                Slack sends the clicks to <--public-url>/hooks/slack/interact (a tunnel or reverse proxy to --listen)

The daemon runs the bot, the webhook and Slack; \`sbx status\` shows whether they are connected and delivering.

Blocked requests are posted to one topic per sandbox ("<name> · <repo dir>"); answer there with
/allow <domain>, /allow <domain> --global, /deny <domain>, /allowlist or /status.
Only the --allow-sender people are obeyed; anyone else gets a polite refusal.`,
      );
  },
  async run(ctx, args, opts) {
    const config = await import("../../chat/config");
    const [action, provider] = args;
    if (action === "setup" && (provider === "webhook" || provider === "slack")) return setupChannel(ctx, provider, opts);
    if (action === "setup") {
      if (provider !== "zulip") {
        throw new SbxError("usage", provider === undefined ? "sbx chat setup needs a provider" : `unknown chat provider '${provider}'`, {
          hint: `Zulip, Slack or a webhook: ${USAGE_HINT}, or \`sbx chat setup slack …\`, \`sbx chat setup webhook …\` (sbx help chat-setup)`,
        });
      }
      const missing = (["site", "email", "keyFile", "stream"] as const).filter((k) => typeof opts[k] !== "string");
      if (missing.length) {
        const flag = (k: string) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
        throw new SbxError("usage", `sbx chat setup zulip needs ${missing.map(flag).join(", ")}`, { hint: USAGE_HINT });
      }
      const senders = (opts.allowSender as string[] | undefined) ?? [];
      const cfg = config.buildZulipConfig({
        site: opts.site as string,
        email: opts.email as string,
        apiKey: config.readKeyFile(opts.keyFile as string),
        stream: opts.stream as string,
        allowSenders: senders,
      });
      // A key the server refuses would only show later, as a bot that never connects: ask the server first.
      ctx.render.info(`checking the bot's key with ${cfg.site} …`);
      const { checkZulipKey } = await import("../../chat/check");
      // Through the parent proxy as the daemon's bot will go (the config's `proxy`, else the environment's).
      const { outboundFetch } = await import("../outbound");
      const me = await checkZulipKey(cfg, { fetch: await outboundFetch(ctx) });
      ctx.render.info(`the server accepts the key: ${me.isBot ? "bot" : "account"} '${me.fullName}' (${me.email})`);
      if (!me.isBot) ctx.render.info(`note: ${me.email} is a person's account, not a bot: its messages will be posted as that person (Personal settings → Bots makes a bot)`);
      const file = config.writeChatConfig(ctx.paths.configDir, cfg);
      ctx.render.out(`wrote ${file} (mode 0600): bot ${cfg.email} on ${cfg.site}, stream '${cfg.stream}'`);
      if (cfg.allowSenders.length === 0) {
        ctx.render.info("warning: no --allow-sender given: the bot will refuse every command until you add someone");
      } else ctx.render.info(`commands are obeyed from: ${cfg.allowSenders.join(", ")}`);
      // A running daemon restarts its bot with the new config; one started later reads it at start.
      const client = await runningDaemon(ctx);
      if (client) say(ctx, await reload(client));
      else ctx.render.info("the daemon starts the bot when it starts (`sbx status` shows it)");
      return ExitCode.ok;
    }
    if (action === "remove" || action === "rm") return removeAction(ctx, provider, opts);
    if (action === "reload") {
      const { daemonFor } = await import("../../client/cli");
      say(ctx, await reload(await daemonFor(ctx)));
      return ExitCode.ok;
    }
    if (action === "show") return showAction(ctx, opts);
    throw new SbxError("usage", action === undefined ? "sbx chat needs an action" : `unknown action '${action}'`, {
      hint: "Use `sbx chat setup zulip|slack|webhook …`, `sbx chat show`, `sbx chat remove` or `sbx chat reload`.",
    });
  },
};

/** The daemon's client when one answers; null when none runs (it reads chat.json when it starts). */
async function runningDaemon(ctx: CliContext): Promise<DaemonClient | null> {
  const { DaemonClient } = await import("../../client/client");
  const client = new DaemonClient(ctx.paths.controlSocket);
  return (await client.health()) ? client : null;
}

/** Asks the daemon to restart its bot from the current chat.json; returns the bot's status. */
async function reload(client: DaemonClient): Promise<ChatStatus> {
  const { chatReload } = await import("../../client/hosted");
  return chatReload(client);
}

/** Says how the daemon's bot is after a reload. */
function say(ctx: CliContext, st: ChatStatus): void {
  if (!st.configured) ctx.render.info("the daemon found no chat config: its bot is off");
  else if (st.error && !st.connected) ctx.render.info(`the daemon restarted its bot; not connected yet: ${st.error}`);
  else ctx.render.info(`the daemon restarted its bot for stream '${st.stream ?? ""}' (\`sbx status\` shows when it is connected)`);
}

type Opts = Record<string, unknown>;

/** `sbx chat setup webhook|slack`: checked with the service, merged into approvals.json, the daemon told. */
async function setupChannel(ctx: CliContext, provider: "webhook" | "slack", opts: Opts): Promise<number> {
  const setup = await import("../../chat/channels-setup");
  const str = (k: string) => (typeof opts[k] === "string" ? (opts[k] as string) : undefined);
  const need = (keys: string[], usage: string) => {
    const missing = keys.filter((k) => str(k) === undefined);
    if (missing.length) throw new SbxError("usage", `sbx chat setup ${provider} needs ${missing.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(", ")}`, { hint: usage });
  };
  const listener = { publicUrl: str("publicUrl"), listen: str("listen") };
  // The check goes through the parent proxy as the daemon's deliveries will (the config's `proxy`, else the environment's).
  const out = { fetch: await (await import("../outbound")).outboundFetch(ctx) };
  let config: import("../../chat/channels-config").ApprovalsConfig;
  if (provider === "webhook") {
    need(["url", "secretFile"], setup.WEBHOOK_USAGE);
    ctx.render.info(`sending a signed test delivery (ping) to the webhook …`);
    const r = await setup.setupWebhook(ctx.paths.configDir, { url: str("url")!, secretFile: str("secretFile")!, ...listener }, out);
    config = r.config;
    if (r.ping === null) ctx.render.info("the webhook accepted the ping");
    else ctx.render.info(`warning: the ping failed (${r.ping}); saved all the same: deliveries are retried, and \`sbx status\` shows how they go`);
    ctx.render.out(`wrote ${r.file} (mode 0600): webhook ${(await import("../../chat/channels-config")).shownUrl(r.config.webhook!.url)}`);
  } else {
    need(["tokenFile", "signingSecretFile", "channel", "publicUrl"], setup.SLACK_USAGE);
    ctx.render.info("checking the bot token with Slack (auth.test) …");
    const users = (opts.allowUser as string[] | undefined) ?? [];
    const r = await setup.setupSlack(ctx.paths.configDir, { tokenFile: str("tokenFile")!, signingSecretFile: str("signingSecretFile")!, channel: str("channel")!, allowUsers: users, apiBase: str("apiBase"), ...listener }, out);
    config = r.config;
    ctx.render.out(`wrote ${r.file} (mode 0600): Slack app '${r.bot}' in ${r.team}, channel ${r.config.slack!.channel}`);
    ctx.render.info(users.length ? `clicks are obeyed from: ${users.join(", ")}` : "warning: no --allow-user given: every click will be refused until you add someone");
    ctx.render.info(`in the app's settings, Interactivity & Shortcuts → Request URL: ${r.config.publicUrl}/hooks/slack/interact; invite the app to the channel (/invite @${r.bot})`);
  }
  ctx.render.info(`answers come back to the listener on ${config.listen}${config.publicUrl ? `, which ${config.publicUrl} must reach (a tunnel or reverse proxy)` : " (loopback: links work on this machine only unless --public-url names how it is reached)"}`);
  const client = await runningDaemon(ctx);
  if (client) {
    await reload(client);
    ctx.render.info("the daemon restarted its channels (`sbx status` shows how deliveries go)");
  } else ctx.render.info("the daemon starts them when it starts (`sbx status` shows them)");
  return ExitCode.ok;
}

/** `sbx chat remove [zulip|webhook|slack]`: that one, or everything chat setup saved. */
async function removeAction(ctx: CliContext, provider: string | undefined, opts: Opts): Promise<number> {
  if (provider !== undefined && !["zulip", "webhook", "slack"].includes(provider)) {
    throw new SbxError("usage", `unknown chat provider '${provider}'`, { hint: "Run `sbx chat remove` (everything), or name zulip, slack or webhook." });
  }
  const [config, channels] = await Promise.all([import("../../chat/config"), import("../../chat/channels-config")]);
  const r = provider === undefined || provider === "zulip" ? config.removeChatConfig(ctx.paths.configDir) : { file: config.chatConfigPath(ctx.paths.configDir), removed: false, config: null };
  const gone = provider === "zulip" ? [] : (["webhook", "slack"] as const).filter((p) => (provider === undefined || provider === p) && channels.removeApprovalsChannel(ctx.paths.configDir, p));
  if (provider === undefined) channels.removeApprovalsChannel(ctx.paths.configDir, "all");
  // The daemon reads its configs only when it starts and on reload: a running one is told now, so its bot stops.
  const client = await runningDaemon(ctx);
  const status = client ? await reload(client) : null;
  if (opts.json) {
    ctx.render.json({ removed: r.removed, file: r.file, config: r.config, ...(gone.length ? { channels: gone } : {}), daemon: status ? { running: true, chat: status } : { running: false } });
    return ExitCode.ok;
  }
  if (r.removed) {
    const what = r.config ? `: bot ${r.config.email} on ${r.config.site}, stream '${r.config.stream}', and its API key` : ", and the API key in it";
    ctx.render.out(`removed ${r.file}${what}`);
    ctx.render.info("the key itself still works on Zulip until you generate a new one there (Personal settings → Bots → the bot), or deactivate the bot");
  }
  for (const p of gone) ctx.render.out(`removed the ${p} and its secrets from ${channels.approvalsConfigPath(ctx.paths.configDir)}`);
  if (!r.removed && gone.length === 0) ctx.render.out(provider === undefined ? `chat is not set up: nothing to remove (no ${r.file})` : `${provider} is not set up: nothing to remove`);
  if (status) say(ctx, status);
  else if (r.removed || gone.length) ctx.render.info("no daemon is running; the next one starts without them");
  return ExitCode.ok;
}

/** `sbx chat show`: every config, never a key, a secret or a URL's query. */
async function showAction(ctx: CliContext, opts: Opts): Promise<number> {
  const [config, channels] = await Promise.all([import("../../chat/config"), import("../../chat/channels-config")]);
  const cfg = config.readChatConfig(ctx.paths.configDir);
  const ch = channels.readApprovalsConfig(ctx.paths.configDir);
  if (cfg === null && ch === null) throw new SbxError("not_found", "chat is not set up", { hint: USAGE_HINT });
  const zulip = cfg ? (({ apiKey: _key, ...shown }) => shown)(cfg) : null;
  const approvals = ch ? channels.shownApprovals(ch) : null;
  if (opts.json) {
    // The Zulip config's fields stay at the top level, as before; the webhook and Slack beside them.
    ctx.render.json({ ...(zulip ?? {}), ...(approvals ? { approvals } : {}) });
    return ExitCode.ok;
  }
  if (zulip) {
    ctx.render.out(`provider  ${zulip.provider}\nsite      ${zulip.site}\nbot       ${zulip.email}\nstream    ${zulip.stream}`);
    ctx.render.out(`senders   ${zulip.allowSenders.join(", ") || "(none: every command is refused)"}`);
  }
  if (approvals) {
    if (approvals.webhook) ctx.render.out(`webhook   ${approvals.webhook.url} (links valid ${approvals.webhook.linkMinutes} min)`);
    if (approvals.slack) ctx.render.out(`slack     channel ${approvals.slack.channel}, clicks obeyed from ${approvals.slack.allowUsers.join(", ") || "(nobody)"}`);
    ctx.render.out(`listener  ${approvals.listen}${approvals.publicUrl ? `, public ${approvals.publicUrl}` : ""}`);
  }
  return ExitCode.ok;
}
