// sbx doctor: reports whether this host can run sandboxes and what to fix.
import { existsSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import type { CheckStatus } from "../../doctor/doctor";
import { ExitCode } from "../../core/errors";
import type { BackendKind } from "../../core/schemas";
import type { Verb } from "../verb";

/** Live sandboxes (name, backend, repo); none when no state exists yet (doctor creates no database). */
async function liveSandboxes(dbFile: string): Promise<{ name: string; backend: BackendKind; repo: string }[]> {
  if (!existsSync(dbFile)) return [];
  const { Store } = await import("../../store/store");
  const store = new Store(dbFile);
  try {
    return store.listSandboxes().map((s) => ({ name: s.name, backend: s.backend, repo: s.repo }));
  } finally {
    store.close();
  }
}

/** The repo around `cwd` (the nearest dir with a `.git`), else `cwd` itself (a guarded folder may hide the `.git`). */
function repoAround(cwd: string): string {
  for (let d = cwd; ; d = dirname(d)) {
    if (existsSync(join(d, ".git"))) return d;
    if (dirname(d) === d) return cwd;
  }
}

/** The program the daemon runs (its Bun, or sbx's own binary), as a real path: what Full Disk Access is given to. */
async function daemonProgram(): Promise<string> {
  const { defaultDaemonArgv } = await import("../../client/autostart");
  const p = defaultDaemonArgv()[0]!;
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** The config's `trust`, home-expanded; a config that does not parse is said by its own check, not here. */
async function configTrust(ctx: { paths: import("../../sys/paths").Paths; env: import("../../sys/env").Env }): Promise<{ trust?: "host" | string[] }> {
  const { expandHome, loadConfig } = await import("../../sys/config-file");
  try {
    const t = loadConfig(ctx.paths, ctx.env).trust;
    return t === undefined ? {} : { trust: t === "host" ? t : t.map((f) => expandHome(f, ctx.env.vars.HOME)) };
  } catch {
    return {};
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
    const { readStored } = await import("../../secrets/stored");
    const { KINDS } = await import("../../core/backend-kind");
    const sandboxes = await liveSandboxes(ctx.paths.dbFile);
    const mac = ctx.env.platform === "darwin";
    const checks = await runDoctor({
      exec: ctx.exec,
      env: ctx.env,
      paths: ctx.paths,
      bunVersion: Bun.version,
      repos: [...new Set(sandboxes.map((s) => s.repo))].filter((r) => existsSync(r)),
      ...(await configTrust(ctx)),
      secrets: await readStored({ exec: ctx.exec, platform: ctx.env.platform, env: ctx.env.raw, configDir: ctx.paths.configDir, home: ctx.env.vars.HOME, uid: ctx.env.uid }).catch(() => ({})),
      ...(mac
        ? {
            macosRepos: [...sandboxes.filter((s) => KINDS[s.backend].privacyProtectedRepo).map((s) => ({ path: s.repo, what: `sandbox ${s.name}` })), { path: repoAround(ctx.cwd), what: "this repo" }],
            daemonProgram: await daemonProgram(),
          }
        : {}),
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
