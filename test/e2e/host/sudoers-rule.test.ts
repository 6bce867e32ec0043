// The macOS root kit's sudoers rule on a real sudo (the same upstream sudo macOS ships): visudo accepts it, the host user runs exactly the helper argv as root without a password, and nothing near it.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { kitHelperArgv, kitPaths, renderKit } from "../../../src/drivers/macos/install";
import { cannotCreateUsers, createTestUser, type TestUser } from "../../support/test-user";

const why =
  cannotCreateUsers() ??
  (!existsSync("/usr/sbin/visudo") || !existsSync("/usr/bin/sudo") ? "sudo/visudo missing (install.sh installs sudo)" : undefined) ??
  (!existsSync("/etc/sudoers.d") ? "no /etc/sudoers.d on this machine" : undefined);

describe.skipIf(why !== undefined)(`the kit's sudoers rule on a real sudo${why ? ` (skipped: ${why})` : ""}`, () => {
  let user: TestUser;
  let lib: string;
  let rule: string;
  const made: string[] = [];
  afterAll(() => {
    for (const p of made) rmSync(p, { recursive: true, force: true });
    user?.remove();
  });

  /** As the test user, with no password and no terminal: sudo -n <argv>. */
  const asUser = (argv: string[]) => user.run(["sudo", "-n", ...argv], { cwd: "/" });

  test("visudo accepts the rule; the helper argv runs as root with no password", () => {
    user = createTestUser({ groups: [] });
    // A root-owned stand-in kit outside any home: its "bun" reports who runs it and the arguments it got.
    lib = mkdtempSync("/tmp/sbx-kit-e2e-");
    made.push(lib);
    chmodSync(lib, 0o755);
    const k = { ...kitPaths(user.name, lib), sudoers: join("/etc/sudoers.d", `sbx_e2e_${user.name.replace(/[^a-z0-9]/g, "")}`) };
    mkdirSync(k.shims);
    writeFileSync(k.bun, '#!/bin/sh\necho "uid=$(id -u) args=$*"\n', { mode: 0o755 });
    writeFileSync(k.helper, "", { mode: 0o644 });
    rule = renderKit(user.name, k).sudoers;
    const file = join(lib, "rule");
    writeFileSync(file, rule, { mode: 0o440 });
    const check = Bun.spawnSync(["visudo", "-cf", file], { stdout: "pipe", stderr: "pipe" });
    expect(`${check.stdout}${check.stderr}`).toContain("parsed OK");
    writeFileSync(k.sudoers, rule, { mode: 0o440 });
    made.push(k.sudoers);

    const argv = [...kitHelperArgv(k), '{"op":"pf-state"}'];
    const r = asUser(argv);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(`uid=0 args=--no-env-file --config=/dev/null ${k.helper} {"op":"pf-state"}`);
  });

  test.each([
    ["without the flags (a bunfig.toml or .env in the caller's directory would be read)", (k: { bun: string; helper: string }) => [k.bun, k.helper, "{}"]],
    ["another script", (k: { bun: string }) => [k.bun, "--no-env-file", "--config=/dev/null", "/tmp/evil.js", "{}"]],
    ["another config", (k: { bun: string; helper: string }) => [k.bun, "--no-env-file", "--config=/tmp/evil.toml", k.helper, "{}"]],
    ["a shell", () => ["/bin/sh", "-c", "id -u"]],
  ])("refused: %s", (_what, argvOf) => {
    const k = kitPaths(user.name, lib);
    const r = asUser(argvOf(k));
    expect(r.code).not.toBe(0);
    expect(r.stdout).not.toContain("uid=0");
    expect(r.stderr).toMatch(/password is required|not allowed/);
  });
});
