// sbx chat: store the Zulip bot's config host-side once the server accepts its key (setup), show it without the key, remove it, and have the daemon (which hosts the bot) pick it up.
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { CliContext, Verb } from "../verb";
import type { DaemonClient } from "../../client/client";
import type { ChatStatus } from "../../daemon/protocol";

const USAGE_HINT =
  "sbx chat setup zulip --site https://ORG.zulipchat.com --email BOT@ORG.zulipchat.com --key-file FILE --stream STREAM --allow-sender YOU@EXAMPLE.COM";

export const chat: Verb = {
  name: "chat",
  summary: "set up chat approvals (Zulip)",
  declare(cmd: Command) {
    cmd
      .argument("<action>", "setup | show | remove | reload")
      .argument("[provider]", "zulip")
      .option("--site <url>", "the Zulip organisation's URL (https)")
      .option("--email <address>", "the bot's email address")
      .option("--key-file <file>", "a file holding the bot's API key (never pass the key itself)")
      .option("--stream <name>", "the stream the bot posts to and listens in")
      .option("--allow-sender <email...>", "people whose /allow and /deny the bot obeys (repeatable)")
      .option("--json", "print JSON (show, remove)")
      .addHelpText(
        "after",
        `
  setup zulip   checks the key with the server (GET /api/v1/users/me as the bot), then writes the bot's
                config, key included, to <config dir>/chat.json (mode 0600); the key is read from --key-file.
                A key the server refuses, a bot of another organisation, or a server that does not answer
                is refused (exit 77, 78 or 69) and nothing is saved
  show          prints the config without the key
  remove        deletes chat.json and so the key in it (rm works too); a running daemon stops its bot at once.
                With nothing set up it says so and exits 0. The key stays valid on Zulip until you make a new one
  reload        makes the daemon restart its bot with the current config (setup and remove do this when a daemon runs)

The daemon runs the bot; \`sbx status\` shows whether it is connected.

Blocked requests are posted to one topic per sandbox ("<name> · <repo dir>"); answer there with
/allow <domain>, /allow <domain> --global, /deny <domain>, /allowlist or /status.
Only the --allow-sender people are obeyed; anyone else gets a polite refusal.`,
      );
  },
  async run(ctx, args, opts) {
    const config = await import("../../chat/config");
    const [action, provider] = args;
    if (action === "setup") {
      if (provider !== "zulip") {
        throw new SbxError("usage", provider === undefined ? "sbx chat setup needs a provider" : `unknown chat provider '${provider}'`, {
          hint: `Zulip is the one supported today: ${USAGE_HINT}`,
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
      const me = await checkZulipKey(cfg);
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
    if (action === "remove" || action === "rm") {
      if (provider !== undefined && provider !== "zulip") {
        throw new SbxError("usage", `unknown chat provider '${provider}'`, { hint: "Run `sbx chat remove`: it removes whatever `sbx chat setup` saved." });
      }
      const r = config.removeChatConfig(ctx.paths.configDir);
      // The daemon reads chat.json only when it starts and on reload: a running one is told now, so its bot stops.
      const client = await runningDaemon(ctx);
      const status = client ? await reload(client) : null;
      if (opts.json) {
        ctx.render.json({ removed: r.removed, file: r.file, config: r.config, daemon: status ? { running: true, chat: status } : { running: false } });
        return ExitCode.ok;
      }
      if (!r.removed) ctx.render.out(`chat is not set up: nothing to remove (no ${r.file})`);
      else {
        const what = r.config ? `: bot ${r.config.email} on ${r.config.site}, stream '${r.config.stream}', and its API key` : ", and the API key in it";
        ctx.render.out(`removed ${r.file}${what}`);
        ctx.render.info("the key itself still works on Zulip until you generate a new one there (Personal settings → Bots → the bot), or deactivate the bot");
      }
      if (status) say(ctx, status);
      else if (r.removed) ctx.render.info("no daemon is running; the next one starts without a bot");
      return ExitCode.ok;
    }
    if (action === "reload") {
      const { daemonFor } = await import("../../client/cli");
      say(ctx, await reload(await daemonFor(ctx)));
      return ExitCode.ok;
    }
    if (action === "show") {
      const cfg = config.readChatConfig(ctx.paths.configDir);
      if (cfg === null) throw new SbxError("not_found", "chat is not set up", { hint: USAGE_HINT });
      const { apiKey: _key, ...shown } = cfg;
      if (opts.json) ctx.render.json(shown);
      else {
        ctx.render.out(`provider  ${shown.provider}\nsite      ${shown.site}\nbot       ${shown.email}\nstream    ${shown.stream}`);
        ctx.render.out(`senders   ${shown.allowSenders.join(", ") || "(none: every command is refused)"}`);
      }
      return ExitCode.ok;
    }
    throw new SbxError("usage", action === undefined ? "sbx chat needs an action" : `unknown action '${action}'`, {
      hint: "Use `sbx chat setup zulip …`, `sbx chat show`, `sbx chat remove` or `sbx chat reload`.",
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
