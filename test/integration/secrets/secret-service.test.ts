// The Secret Service vault against a real one: a session bus and GNOME Keyring of this test's own (started and stopped
// here), driven through the real secret-tool. The value goes over stdin, never argv, and reads back byte for byte.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chooseVault, secretServiceVault } from "../../../src/secrets/vault";
import { createExec } from "../../../src/sys/exec";

const tools = ["dbus-daemon", "gnome-keyring-daemon", "secret-tool"].filter((t) => Bun.which(t) === null);
const canRun = tools.length === 0;
const why = `missing ${tools.join(", ")} (apt-get install dbus-daemon gnome-keyring libsecret-tools)`;

let dir = "";
let bus: Bun.Subprocess | null = null;
let keyring: Bun.Subprocess | null = null;
let env: Record<string, string> = {};

describe.skipIf(!canRun)(`vault: a real Secret Service${canRun ? "" : ` (skipped: ${why})`}`, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-secret-service-"));
    const address = `unix:path=${join(dir, "bus")}`;
    bus = Bun.spawn(["dbus-daemon", "--session", "--nofork", `--address=${address}`], { stdout: "ignore", stderr: "ignore" });
    for (let i = 0; i < 100 && !existsSync(join(dir, "bus")); i++) await Bun.sleep(20);
    env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, DBUS_SESSION_BUS_ADDRESS: address, XDG_RUNTIME_DIR: dir };
    // --unlock reads the login keyring's password on stdin: a new keyring, made and unlocked with it.
    keyring = Bun.spawn(["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"], { env, stdin: new TextEncoder().encode("test-password"), stdout: "ignore", stderr: "ignore" });
    const probe = createExec(env);
    for (let i = 0; i < 100; i++) {
      const r = await probe.run(["secret-tool", "lookup", "service", "sbx", "name", "__ready__"], { check: false, timeoutMs: 2000 });
      if (r.exitCode === 1 && r.stderr === "") break;
      await Bun.sleep(50);
    }
  }, 30_000);

  afterAll(async () => {
    for (const p of [keyring, bus]) {
      p?.kill();
      await p?.exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("chosen where the session's service answers; set, get, replace, remove", async () => {
    const exec = createExec(env);
    const chosen = await chooseVault(exec, { platform: "linux", env, file: join(dir, "secrets.json") });
    expect(chosen.vault.kind).toBe("secret-service");
    const v = secretServiceVault(exec);
    const value = "npm_" + "aB3".repeat(12) + "\ttab and ünïcode";
    expect(await v.get("NPM_TOKEN")).toBeNull();
    await v.set("NPM_TOKEN", value);
    expect(await v.get("NPM_TOKEN")).toBe(value);
    await v.set("NPM_TOKEN", "replaced-value-0123456789");
    expect(await v.get("NPM_TOKEN")).toBe("replaced-value-0123456789");
    expect(await v.remove("NPM_TOKEN")).toBe(true);
    expect(await v.get("NPM_TOKEN")).toBeNull();
    expect(await v.remove("NPM_TOKEN")).toBe(false);
  });

  test("without a session bus the file is chosen, and says why", async () => {
    const c = await chooseVault(createExec(env), { platform: "linux", env: { PATH: env.PATH! }, file: join(dir, "secrets.json") });
    expect(c.vault.kind).toBe("file");
    expect(c.why).toContain("DBUS_SESSION_BUS_ADDRESS");
  });
});
