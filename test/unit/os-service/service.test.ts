// Installing the service writes the rendered file and applies it through Exec (systemctl / launchctl): transcripts checked, idempotent, refusing without systemd.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { kitPaths } from "../../../src/drivers/macos/install";
import { SbxError } from "../../../src/core/errors";
import { installService, serviceFile, serviceKind, serviceSpec, serviceStatus, uninstallService, type ServiceDeps } from "../../../src/os-service/service";
import { readEnv } from "../../../src/sys/env";
import { pathsFor } from "../../../src/sys/paths";
import { FakeExec } from "../../fakes/exec";

let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

function deps(platform: NodeJS.Platform, exec: FakeExec, systemd = true): ServiceDeps {
  root = mkdtempSync(join(tmpdir(), "sbx-svc-"));
  const env = readEnv({ vars: { HOME: join(root, "home"), PATH: "/usr/bin:/bin", XDG_STATE_HOME: join(root, "state") }, uid: 501, gid: 20, platform });
  return { env, paths: pathsFor(env), exec, daemonArgv: ["/usr/local/bin/sbx", "daemon"], systemdRunning: () => systemd };
}

describe("sbx service on Linux (systemd user unit)", () => {
  test("install writes the unit and enables it; a second install changes nothing on disk and restarts nothing", async () => {
    const exec = new FakeExec()
      .expect(["systemctl", "--user", "daemon-reload"], {}, 2)
      .expect(["systemctl", "--user", "enable", "--now", "sbx.service"], {}, 2)
      .expect(["systemctl", "--user", "restart", "sbx.service"]);
    const d = deps("linux", exec);
    const kind = serviceKind(d.env, false);
    expect(kind).toBe("systemd-user");
    const first = await installService(d, kind);
    expect(first.file).toBe(join(root, "home", ".config", "systemd", "user", "sbx.service"));
    expect(first.changed).toBe(true);
    expect(readFileSync(first.file, "utf8")).toContain("ExecStart=/usr/local/bin/sbx daemon");
    const second = await installService(d, kind);
    expect(second.changed).toBe(false);
    exec.assertDone();
    expect(exec.transcript()).toBe(
      [
        "systemctl --user daemon-reload",
        "systemctl --user enable --now sbx.service",
        "systemctl --user restart sbx.service",
        "systemctl --user daemon-reload",
        "systemctl --user enable --now sbx.service",
        "",
      ].join("\n"),
    );
  });

  test("uninstall disables and removes; uninstalling what is not installed succeeds", async () => {
    const exec = new FakeExec()
      .always(["systemctl", "--user", "disable", "--now", "sbx.service"], { exitCode: 1, stderr: "not loaded" })
      .always(["systemctl", "--user", "daemon-reload"]);
    const d = deps("linux", exec);
    const r = await uninstallService(d, "systemd-user");
    expect(r.changed).toBe(false);
    expect(existsSync(serviceFile("systemd-user", d.env))).toBe(false);
  });

  test("uninstall without systemd (none was ever installed: sbx uninstalled as the guide says) succeeds and runs nothing; a unit file left behind is removed", async () => {
    const exec = new FakeExec();
    const d = deps("linux", exec, false);
    expect(await uninstallService(d, "systemd-user")).toMatchObject({ changed: false });
    const file = serviceFile("systemd-user", d.env);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, "[Unit]\n");
    expect(await uninstallService(d, "systemd-user")).toMatchObject({ changed: true });
    expect(existsSync(file)).toBe(false);
    exec.assertDone();
  });

  test("status reads systemctl's answers", async () => {
    const exec = new FakeExec()
      .expect(["systemctl", "--user", "is-active", "sbx.service"], { stdout: "active\n" })
      .expect(["systemctl", "--user", "is-enabled", "sbx.service"], { stdout: "enabled\n" });
    const st = await serviceStatus(deps("linux", exec), "systemd-user");
    expect(st).toMatchObject({ kind: "systemd-user", installed: false, active: true, enabled: true, detail: "active, enabled" });
  });

  test("without systemd, install refuses with a hint and runs nothing", async () => {
    const exec = new FakeExec();
    const d = deps("linux", exec, false);
    let err: unknown;
    try {
      await installService(d, "systemd-user");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).message).toContain("systemd is not running");
    expect((err as SbxError).hint).toContain("sbx daemon");
    expect(exec.calls).toEqual([]);
  });

  test("the system unit needs root", () => {
    const exec = new FakeExec();
    expect(() => serviceKind(deps("linux", exec).env, true)).toThrow("needs root");
  });
});

describe("sbx service on macOS (launchd LaunchAgent and the root kit)", () => {
  test("install shows the sudoers rule, installs the root kit, then writes the plist and bootstraps it into the user's GUI domain; uninstall boots it out and removes the rule", async () => {
    const isSudo = (a: readonly string[]) => a[0] === "/usr/bin/sudo";
    const exec = new FakeExec()
      .expect((a) => a.includes("build"))
      .always(isSudo)
      .expect(["launchctl", "bootout", "gui/501/dev.sbx.daemon"], { exitCode: 3, stderr: "No such process" })
      .expect((a) => a[0] === "launchctl" && a[1] === "bootstrap" && a[2] === "gui/501")
      .expect(["launchctl", "print", "gui/501/dev.sbx.daemon"], { stdout: "gui/501/dev.sbx.daemon = {\n\tstate = running\n}" }, 2)
      .expect(["launchctl", "bootout", "gui/501/dev.sbx.daemon"]);
    const d = deps("darwin", exec);
    const lib = join(root, "libexec-sbx");
    const shown: string[] = [];
    d.kit = { source: { bun: "/opt/bun", helperSource: "/src/privileged.ts", shimDir: "/src/shims" }, paths: kitPaths(d.env.userName, lib), otherRules: () => [] };
    d.showSudoers = (path, rule) => shown.push(path, rule);
    const kind = serviceKind(d.env, false);
    expect(kind).toBe("launchd");
    const r = await installService(d, kind);
    // Shown before sudo ran anything, and the rule shown is the one installed.
    expect(shown[0]).toBe(kitPaths(d.env.userName, lib).sudoers);
    expect(shown[1]).toContain(`${lib}/bun --no-env-file --config\\=/dev/null ${lib}/privileged.js *`);
    const firstSudo = exec.calls.findIndex((c) => isSudo(c.argv));
    const agent = exec.calls.findIndex((c) => c.argv[0] === "launchctl" && c.argv[1] === "bootstrap");
    expect(firstSudo).toBeGreaterThan(0);
    expect(firstSudo).toBeLessThan(agent); // the kit before the daemon that needs it
    expect(r.kit?.lib).toBe(lib);
    expect(r.file).toBe(join(root, "home", "Library", "LaunchAgents", "dev.sbx.daemon.plist"));
    expect(exec.calls[agent]!.argv[3]).toBe(r.file);
    expect(readFileSync(r.file, "utf8")).toContain(`<string>${d.paths.daemonLog}</string>`);
    // The fake sudo wrote nothing: status says which of the kit's files are missing.
    const missing = await serviceStatus(d, kind);
    expect(missing).toMatchObject({ installed: false, active: true });
    expect(missing.detail).toContain(`root kit missing ${lib}/bun`);
    for (const f of [`${lib}/bun`, `${lib}/privileged.js`, `${lib}/shims/git.ts`, `${lib}/shims/gh.ts`, `${lib}/shims/sbx-egress.ts`, `${lib}/shims/agent-setup.ts`]) {
      mkdirSync(dirname(f), { recursive: true });
      writeFileSync(f, "");
    }
    d.kit.paths = { ...kitPaths(d.env.userName, lib), sudoers: `${lib}/sudoers-alice` };
    writeFileSync(d.kit.paths.sudoers, "");
    const st = await serviceStatus(d, kind);
    expect(st).toMatchObject({ installed: true, active: true, detail: "running; root kit installed" });
    const u = await uninstallService(d, kind);
    expect(u.changed).toBe(true);
    expect(existsSync(r.file)).toBe(false);
    expect(exec.calls.some((c) => isSudo(c.argv) && c.argv.join(" ") === `/usr/bin/sudo /bin/rm -f ${lib}/sudoers-alice`)).toBe(true);
    exec.assertDone();
  });
});

describe("parent-proxy: the service's daemon goes out through the host's proxy, never with its credentials in the unit", () => {
  test("proxy variables without credentials cross into the unit; one that holds a user or password does not", () => {
    root = mkdtempSync(join(tmpdir(), "sbx-svc-"));
    const env = readEnv({
      vars: { HOME: join(root, "home"), PATH: "/usr/bin:/bin", HTTPS_PROXY: "http://proxy.corp:3128", http_proxy: "http://jo:hunter22@proxy.corp:3128", ALL_PROXY: "jo:pw@proxy:1", NO_PROXY: ".corp,10.0.0.0/8" },
      uid: 501,
      gid: 20,
      platform: "linux",
    });
    const spec = serviceSpec({ env, paths: pathsFor(env), daemonArgv: ["/usr/local/bin/sbx", "daemon"] });
    expect(spec.env).toEqual({ PATH: "/usr/bin:/bin", HTTPS_PROXY: "http://proxy.corp:3128", NO_PROXY: ".corp,10.0.0.0/8" });
    expect(JSON.stringify(spec)).not.toContain("hunter22");
  });
});
