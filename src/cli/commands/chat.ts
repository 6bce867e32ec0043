// sbx chat: store the Zulip bot's config host-side (setup), show it without the key, and have the daemon (which hosts the bot) pick it up.
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { Verb } from "../verb";

const USAGE_HINT =
  "sbx chat setup zulip --site https://ORG.zulipchat.com --email BOT@ORG.zulipchat.com --key-file FILE --stream STREAM --allow-sender YOU@EXAMPLE.COM";

export const chat: Verb = {
  name: "chat",
  summary: "set up chat approvals (Zulip)",
  declare(cmd: Command) {
    cmd
      .argument("<action>", "setup | show | reload")
      .argument("[provider]", "zulip")
      .option("--site <url>", "the Zulip organisation's URL (https)")
      .option("--email <address>", "the bot's email address")
      .option("--key-file <file>", "a file holding the bot's API key (never pass the key itself)")
      .option("--stream <name>", "the stream the bot posts to and listens in")
      .option("--allow-sender <email...>", "people whose /allow and /deny the bot obeys (repeatable)")
      .option("--json", "print JSON (show)")
      .addHelpText(
        "after",
        `
  setup zulip   writes the bot's config to <config dir>/chat.json (mode 0600); the key is read from --key-file
  show          prints the config without the key
  reload        makes the daemon restart its bot with the current config (setup does this when a daemon runs)

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
      const file = config.writeChatConfig(ctx.paths.configDir, cfg);
      ctx.render.out(`wrote ${file} (mode 0600): bot ${cfg.email} on ${cfg.site}, stream '${cfg.stream}'`);
      if (cfg.allowSenders.length === 0) {
        ctx.render.info("warning: no --allow-sender given: the bot will refuse every command until you add someone");
      } else ctx.render.info(`commands are obeyed from: ${cfg.allowSenders.join(", ")}`);
      // A running daemon restarts its bot with the new config; one started later reads it at start.
      const { DaemonClient } = await import("../../client/client");
      const client = new DaemonClient(ctx.paths.controlSocket);
      if (await client.health()) await reload(ctx, client);
      else ctx.render.info("the daemon starts the bot when it starts (`sbx status` shows it)");
      return ExitCode.ok;
    }
    if (action === "reload") {
      const { daemonFor } = await import("../../client/cli");
      await reload(ctx, await daemonFor(ctx));
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
    throw new SbxError("usage", action === undefined ? "sbx chat needs an action" : `unknown action '${action}'`, { hint: "Use `sbx chat setup zulip …`, `sbx chat show` or `sbx chat reload`." });
  },
};

/** Asks the daemon to restart its bot and says how it went. */
async function reload(ctx: Parameters<Verb["run"]>[0], client: import("../../client/client").DaemonClient): Promise<void> {
  const { chatReload } = await import("../../client/hosted");
  const st = await chatReload(client);
  if (!st.configured) ctx.render.info("the daemon found no chat config: the bot is off");
  else if (st.error && !st.connected) ctx.render.info(`the daemon restarted its bot; not connected yet: ${st.error}`);
  else ctx.render.info(`the daemon restarted its bot for stream '${st.stream ?? ""}' (\`sbx status\` shows when it is connected)`);
}
