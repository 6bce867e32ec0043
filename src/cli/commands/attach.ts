// sbx attach [SESSION|NAME]: join a running session read-write (the same as `sbx shell --attach`).
import type { Command } from "commander";
import { SbxError } from "../../core/errors";
import type { SessionView } from "../../daemon/protocol";
import { sandboxArgument } from "../completion/offers";
import type { CliContext, Verb } from "../verb";

/**
 * Pure: the running session `target` means. A session id; else a sandbox's name when it runs exactly one session;
 * with no target, the one session running. Several, or none: an error that lists what there is.
 */
export function pickSession(sessions: readonly SessionView[], target: string | undefined): SessionView {
  const running = sessions.filter((s) => s.exitCode === null);
  const list = (ss: readonly SessionView[]) => ss.map((s) => `${s.id} (${s.sandbox}: ${s.command.join(" ") || "shell"})`).join(", ");
  if (target === undefined) {
    if (running.length === 1) return running[0]!;
    if (running.length === 0) throw new SbxError("not_found", "no session is running", { hint: "`sbx shell NAME` or `sbx run AGENT` starts one." });
    throw new SbxError("usage", `${running.length} sessions are running: say which`, { hint: `sbx attach SESSION, one of: ${list(running)}` });
  }
  const byId = running.find((s) => s.id === target);
  if (byId) return byId;
  const inSandbox = running.filter((s) => s.sandbox === target);
  if (inSandbox.length === 1) return inSandbox[0]!;
  if (inSandbox.length > 1) {
    throw new SbxError("usage", `sandbox '${target}' runs ${inSandbox.length} sessions: say which`, { hint: `sbx attach SESSION, one of: ${list(inSandbox)}` });
  }
  throw new SbxError("not_found", `no running session '${target}' (nor a sandbox of that name running one)`, {
    hint: running.length > 0 ? `Running: ${list(running)}.` : "`sbx ps` lists sessions; `sbx shell NAME` starts one.",
  });
}

/** Joins the session `target` means (see pickSession) from this terminal; returns its exit code (0 on detach). */
export async function attachTo(ctx: CliContext, target: string | undefined, detachFlag: string | undefined, verb: string): Promise<number> {
  // A mistyped --detach-keys is refused before anything else.
  const { parseDetachKeys } = await import("../../core/detach-keys");
  if (detachFlag !== undefined) parseDetachKeys(detachFlag);
  if (!ctx.stdinIsTTY) throw new SbxError("usage", `${verb} needs a terminal`, { hint: "Run it from an interactive terminal." });
  const [{ daemonFor }, { attachShell, processTty }, { detachKeysOf }] = await Promise.all([
    import("../../client/cli"),
    import("../../client/terminal"),
    import("../../client/sandboxes"),
  ]);
  const client = await daemonFor(ctx);
  const session = pickSession((await client.sessions()).sessions, target);
  return attachShell(client, session.id, processTty(), detachKeysOf(ctx, detachFlag));
}

export const attach: Verb = {
  name: "attach",
  summary: "join a running session (its id from `sbx ps`, or its sandbox's name)",
  declare(cmd: Command) {
    cmd
      .addArgument(sandboxArgument("[target]", "a session id, or a sandbox running one session; none: the only session running"))
      .option("--detach-keys <keys>", "the keys that leave the session running and return here (default ctrl-p,ctrl-q; config: detachKeys)")
      .addHelpText(
        "after",
        [
          "",
          "The same as `sbx shell --attach SESSION`. The session's recent screen comes first, and a full-screen program is",
          "made to redraw at this terminal's size. Ctrl-P Ctrl-Q leaves it running again.",
          "",
          "Examples:",
          "  sbx attach                the one session running",
          "  sbx attach demo           the session in sandbox demo",
          "  sbx attach k3v9-2f1c      a session by its id (sbx ps)",
        ].join("\n"),
      );
  },
  run(ctx, args, opts) {
    return attachTo(ctx, args[0], opts.detachKeys as string | undefined, "sbx attach");
  },
};
