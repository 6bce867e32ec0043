// sbx service: install, remove or inspect the controller as a systemd unit (Linux) or launchd LaunchAgent (macOS, with the root kit the macOS backend needs).
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { Verb } from "../verb";

export const service: Verb = {
  name: "service",
  summary: "install, remove or inspect the controller service (systemd / launchd)",
  declare(cmd: Command) {
    cmd
      .argument("<action>", "install | uninstall | status")
      .option("--system", "Linux: a system unit run by root (for the Linux-user backend)")
      .option("--print", "install: print the unit or plist (on macOS also the sudoers rule and the root LaunchDaemon) instead of installing")
      .option("--json", "print JSON")
      .addHelpText(
        "after",
        [
          "",
          "Linux: a systemd user unit (or, with --system, a system unit for the Linux-user backend).",
          "macOS: a LaunchAgent for the controller, after the root kit the macOS backend needs: the one root helper, a Bun",
          "and the shims for sandbox users in /usr/local/libexec/sbx (root-owned), the sudoers rule that lets you run that",
          "helper (shown first, checked with visudo, then written with sudo, which may ask for your password), and a",
          "LaunchDaemon that puts the sandboxes' pf anchors back at boot. uninstall removes them (it refuses while macOS",
          "sandboxes exist). Installing again converges.",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts) {
    const action = args[0];
    const { defaultDaemonArgv } = await import("../../client/autostart");
    const svc = await import("../../os-service/service");
    const deps = {
      env: ctx.env,
      paths: ctx.paths,
      exec: ctx.exec,
      daemonArgv: defaultDaemonArgv(),
      // Shown before sudo writes it: the user sees exactly what they allow.
      showSudoers: (path: string, rule: string) =>
        ctx.render.info(`the sudoers rule sbx installs as ${path} (checked with visudo first; sudo may ask for your password):\n${rule.trimEnd()}`),
    };
    const kind = svc.serviceKind(ctx.env, Boolean(opts.system));
    switch (action) {
      case "install": {
        if (opts.print) {
          ctx.render.out(svc.renderService(kind, svc.serviceSpec(deps)).trimEnd());
          if (kind === "launchd") {
            const kit = await svc.macosSudoersRule(deps);
            ctx.render.out(`\n# ${kit.path}\n${kit.rule.trimEnd()}\n\n# the root kit's LaunchDaemon (pf anchors back at boot)\n${kit.daemonPlist.trimEnd()}`);
          }
          return ExitCode.ok;
        }
        const r = await svc.installService(deps, kind);
        if (opts.json) ctx.render.json({ kind, ...r });
        else {
          if (r.kit) ctx.render.out(`installed the macOS root kit in ${r.kit.lib} (helper, guests' Bun and shims), ${r.kit.sudoers} and ${r.kit.plist}`);
          ctx.render.out(`installed ${kind} service ${r.file}${r.changed ? "" : " (unchanged)"}; the controller now starts at ${kind === "systemd-system" ? "boot" : "login"}`);
        }
        return ExitCode.ok;
      }
      case "uninstall": {
        if (kind === "launchd") await refuseWhileMacosSandboxes(ctx);
        const r = await svc.uninstallService(deps, kind);
        if (opts.json) ctx.render.json({ kind, ...r });
        else ctx.render.out(r.changed ? `removed ${kind} service ${r.file}` : `no ${kind} service was installed`);
        return ExitCode.ok;
      }
      case "status": {
        const st = await svc.serviceStatus(deps, kind);
        if (opts.json) ctx.render.json(st);
        else ctx.render.out(`${st.kind}: ${st.installed ? "installed" : "not installed"} (${st.file}); ${st.active ? "active" : "inactive"}; ${st.detail}`);
        return st.installed && st.active ? ExitCode.ok : ExitCode.unavailable;
      }
      default:
        throw new SbxError("usage", `unknown service action '${action ?? ""}'`, { hint: "Use `sbx service install`, `uninstall` or `status`." });
    }
  },
};

/** The root kit removes the sandboxes whose root work it does (macOS accounts, anchors): it stays while any is left. */
export async function refuseWhileMacosSandboxes(ctx: { paths: { dbFile: string } }): Promise<void> {
  const [{ Store }, { existsSync }] = await Promise.all([import("../../store/store"), import("node:fs")]);
  if (!existsSync(ctx.paths.dbFile)) return; // no state, no sandboxes (and no database made here)
  const store = new Store(ctx.paths.dbFile);
  try {
    const { KINDS } = await import("../../core/backend-kind");
    const left = store.listSandboxes().filter((s) => KINDS[s.backend].rootKit);
    if (left.length === 0) return;
    throw new SbxError("conflict", `${left.length} macOS sandbox(es) still exist (${left.map((s) => s.name).join(", ")}): removing them needs the root helper this would uninstall`, {
      hint: `Remove them first (\`sbx rm ${left[0]!.name}\`), then run \`sbx service uninstall\` again.`,
    });
  } finally {
    store.close();
  }
}
