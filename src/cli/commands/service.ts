// sbx service: install, remove or inspect the controller as a systemd unit (Linux) or launchd LaunchAgent (macOS).
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
      .option("--print", "install: print the unit or plist instead of installing it")
      .option("--json", "print JSON");
  },
  async run(ctx, args, opts) {
    const action = args[0];
    const { defaultDaemonArgv } = await import("../../client/autostart");
    const svc = await import("../../service/service");
    const deps = { env: ctx.env, paths: ctx.paths, exec: ctx.exec, daemonArgv: defaultDaemonArgv() };
    const kind = svc.serviceKind(ctx.env, Boolean(opts.system));
    switch (action) {
      case "install": {
        if (opts.print) {
          ctx.render.out(svc.renderService(kind, svc.serviceSpec(deps)).trimEnd());
          return ExitCode.ok;
        }
        const r = await svc.installService(deps, kind);
        if (opts.json) ctx.render.json({ kind, ...r });
        else ctx.render.out(`installed ${kind} service ${r.file}${r.changed ? "" : " (unchanged)"}; the controller now starts at ${kind === "systemd-system" ? "boot" : "login"}`);
        return ExitCode.ok;
      }
      case "uninstall": {
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
