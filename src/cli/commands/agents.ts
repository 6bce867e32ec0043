// sbx agents: the coding agents `sbx run AGENT` knows: which versions the host's cache holds, which sandboxes ran
// them, and whether this host has a login the LLM proxy can add for each (where it comes from, never what it is).
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

export const agents: Verb = {
  name: "agents",
  summary: "list the coding agents sbx runs: cached versions, sandboxes, host login",
  declare(cmd: Command) {
    cmd.option("--json", "print JSON").addHelpText(
      "after",
      [
        "",
        "VERSION is the one `sbx run AGENT` starts (cached on the host, mounted read-only into Docker sandboxes);",
        "`sbx run --agent-version V AGENT` installs and switches to another. LOGIN says whether the LLM proxy has the",
        "host's key or sign-in to add for the agent, and from where (a variable's name, sbx's secrets, a login file);",
        "the value never enters a sandbox. aider is installed inside each sandbox (pip), so it has no cached version.",
      ].join("\n"),
    );
  },
  async run(ctx, _args, opts) {
    const { daemon } = await import("../../client/sandboxes");
    const { agents: list } = await (await daemon(ctx)).agents();
    if (opts.json) {
      ctx.render.json(list);
      return ExitCode.ok;
    }
    ctx.render.table(
      ["AGENT", "VERSION", "CACHED", "SANDBOXES", "LOGIN"],
      list.map((a) => [
        `${a.name} (${a.title})`,
        a.version ?? (a.install === "pip" ? "in each sandbox" : "-"),
        a.cached.length ? a.cached.join(" ") : "-",
        a.sandboxes.length ? a.sandboxes.map((s) => `${s.name}@${s.version}`).join(" ") : "-",
        a.login.ok ? `yes (${a.login.via.join(", ")})` : "no",
      ]),
      { CACHED: "wrap", SANDBOXES: "wrap", LOGIN: "wrap" },
    );
    return ExitCode.ok;
  },
};
