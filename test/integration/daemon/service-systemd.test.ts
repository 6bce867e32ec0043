// `sbx service install` for real on a machine that runs systemd: the unit is enabled, the daemon answers, and uninstall removes it.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { CLI, makeWorld, type World } from "../../support/daemon-proc";

const systemd = existsSync("/run/systemd/system");
/** A user manager must answer too (root in a container often has none). */
const userManager = systemd && Bun.spawnSync(["systemctl", "--user", "show-environment"]).exitCode === 0;
const why = !systemd ? "systemd is absent (no /run/systemd/system)" : "no systemd user manager answers `systemctl --user`";

let w: World | undefined;
afterAll(async () => {
  if (!w) return;
  Bun.spawnSync([process.execPath, CLI, "service", "uninstall"], { env: w.env });
  w.cleanup();
});

describe.skipIf(!userManager)(`systemd user unit, installed for real${userManager ? "" : ` (skipped: ${why})`}`, () => {
  test("install enables and starts the controller; status says active; uninstall stops and removes it", async () => {
    w = makeWorld();
    // The user manager reads units from the real user's config: use the real HOME and XDG_CONFIG_HOME, private state and sockets.
    const env = { ...w.env, HOME: process.env.HOME ?? "/root", XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME ?? `${process.env.HOME}/.config` };
    const run = (...a: string[]) => Bun.spawnSync([process.execPath, CLI, ...a], { env });
    const inst = run("service", "install");
    expect(inst.exitCode).toBe(0);
    const st = run("service", "status", "--json");
    expect(JSON.parse(st.stdout.toString())).toMatchObject({ kind: "systemd-user", installed: true, active: true });
    const un = run("service", "uninstall");
    expect(un.exitCode).toBe(0);
    expect(Bun.spawnSync(["systemctl", "--user", "is-active", "sbx.service"]).exitCode).not.toBe(0);
  });
});
