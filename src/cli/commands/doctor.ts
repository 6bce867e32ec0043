// sbx doctor: reports whether this host can run sandboxes and what to fix.
import { existsSync } from "node:fs";
import type { Command } from "commander";
import type { CheckStatus } from "../../doctor/doctor";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

/** Distinct host repos with live sandboxes; none when no state exists yet (doctor creates no database). */
async function sandboxRepos(dbFile: string): Promise<string[]> {
  if (!existsSync(dbFile)) return [];
  const { Store } = await import("../../store/store");
  const store = new Store(dbFile);
  try {
    return [...new Set(store.listSandboxes().map((s) => s.repo))].filter((r) => existsSync(r));
  } finally {
    store.close();
  }
}

export const doctor: Verb = {
  name: "doctor",
  summary: "check that this host can run sandboxes, and say what to fix",
  declare(cmd: Command) {
    cmd.option("--json", "print the checks as JSON");
  },
  async run(ctx, _args, opts) {
    const { runDoctor } = await import("../../doctor/doctor");
    const { readSecrets, secretsFile } = await import("../../secrets/store");
    const checks = await runDoctor({
      exec: ctx.exec,
      env: ctx.env,
      paths: ctx.paths,
      bunVersion: Bun.version,
      repos: await sandboxRepos(ctx.paths.dbFile),
      secrets: readSecrets(secretsFile(ctx.paths.configDir)),
    });
    const failed = checks.some((c) => c.status === "fail");
    if (opts.json) {
      ctx.render.json({ ok: !failed, checks });
    } else {
      const { c } = ctx.render;
      const mark: Record<CheckStatus, string> = { ok: c.green("ok  "), warn: c.yellow("warn"), fail: c.red("FAIL") };
      // One column for the details, as wide as the longest check's name.
      const w = Math.max(12, ...checks.map((ch) => ch.name.length));
      for (const ch of checks) {
        ctx.render.out(`${mark[ch.status]}  ${ch.name.padEnd(w)} ${ch.detail}`);
        if (ch.fix) ctx.render.out(`      ${" ".repeat(w)} ${c.dim("fix:")} ${ch.fix}`);
      }
      ctx.render.out(failed ? c.red("sbx cannot run sandboxes here yet: fix the FAIL lines above.") : c.green("sbx can run sandboxes here."));
    }
    return failed ? ExitCode.unavailable : ExitCode.ok;
  },
};
