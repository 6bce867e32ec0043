// The Secret Service vault against a real one: a session bus and GNOME Keyring of this test's own (started and stopped
// here), driven through the real secret-tool. The value goes over stdin, never argv, and reads back byte for byte.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chooseVault, secretServiceVault } from "../../../src/secrets/vault";
import { createExec } from "../../../src/sys/exec";
import { runSecret } from "../../../src/cli/commands/secret";
import { createRender } from "../../../src/cli/render";
import type { CliContext } from "../../../src/cli/verb";
import { readSecrets } from "../../../src/secrets/store";
import { openStoredValues, readVaultRecord } from "../../../src/secrets/stored";
import { credentialFor, hostKeySources } from "../../../src/llm/keys";
import { readFileSync, writeFileSync } from "node:fs";

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
    // A session bus that starts no service on demand: with the system's service files, secret-tool's first call
    // (before our keyring has taken its name) started a second gnome-keyring, without --unlock, which then owned the
    // name with no login collection ("The Secret Service was already initialized" from ours; one start in eight).
    const config = join(dir, "bus.conf");
    writeFileSync(
      config,
      `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>${address}</listen><policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>
`,
    );
    bus = Bun.spawn(["dbus-daemon", `--config-file=${config}`, "--nofork"], { stdout: "ignore", stderr: "ignore" });
    // A loaded CI machine (the e2e soak beside this) was seen to take longer than 2 s to open the bus.
    for (let i = 0; i < 1000 && !existsSync(join(dir, "bus")); i++) await Bun.sleep(20);
    env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, DBUS_SESSION_BUS_ADDRESS: address, XDG_RUNTIME_DIR: dir };
    // --unlock reads the login keyring's password on stdin: a new keyring, made and unlocked with it.
    const startKeyring = () => Bun.spawn(["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"], { env, stdin: new TextEncoder().encode("test-password"), stdout: "ignore", stderr: "ignore" });
    keyring = startKeyring();
    // Ready when an item can be stored: the service answers lookups before --unlock has made the login collection
    // (a loaded CI machine stored into "collection/login" that did not exist yet). A keyring that gave up (it found
    // no bus yet) is started again.
    const probe = createExec(env);
    let last = "";
    for (const until = Date.now() + 75_000; ; ) {
      const r = await probe.run(["secret-tool", "store", "--label=ready", "service", "sbx-test", "name", "__ready__"], { check: false, timeoutMs: 5000, stdin: "x" });
      if (r.exitCode === 0) break;
      last = r.stderr.trim();
      if (Date.now() > until) throw new Error(`the test's Secret Service never took an item: ${last}`);
      if (keyring.exitCode !== null) keyring = startKeyring();
      await Bun.sleep(100);
    }
    await probe.run(["secret-tool", "clear", "service", "sbx-test", "name", "__ready__"], { check: false, timeoutMs: 5000 });
  }, 90_000);

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

  test("secrets-where-kept: sbx secret set keeps values in the session's keyring, what the file held moves once, and the daemon's LLM keys read them", async () => {
    const exec = createExec(env);
    const configDir = join(dir, "config");
    const file = join(configDir, "secrets.json");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(configDir, { recursive: true, mode: 0o700 });
    writeFileSync(file, JSON.stringify({ OPENAI_API_KEY: "sk-from-the-old-file-0123456789" }), { mode: 0o600 });
    const err: string[] = [];
    const render = createRender({ stdout: () => {}, stderr: (t) => err.push(t), stdoutIsTTY: false, stderrIsTTY: false }, { NO_COLOR: "1" });
    const ctx = { paths: { configDir }, env: { platform: "linux", raw: env, vars: { HOME: dir }, uid: process.getuid!() }, exec, render, stdinIsTTY: false } as unknown as CliContext;
    const piped = (t: string) => ({ stdin: async () => t, hidden: async () => null });
    expect(await runSecret(ctx, ["set", "ANTHROPIC_API_KEY"], {}, piped("sk-ant-in-the-keyring-0123456789\n"))).toBe(0);
    expect(err.join("")).toContain("moved 1 secret (OPENAI_API_KEY)");
    expect(err.join("")).toContain("stored ANTHROPIC_API_KEY in the Secret Service");
    // The file holds no value now, the record only names.
    expect(readSecrets(file)).toEqual({});
    expect(readVaultRecord(configDir)).toMatchObject({ vault: "secret-service", names: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"] });
    expect(readFileSync(join(configDir, "secrets-vault.json"), "utf8")).not.toContain("sk-");
    // In the keyring, under this config dir's items.
    const raw = await exec.run(["secret-tool", "lookup", "service", "sbx", "dir", configDir, "name", "ANTHROPIC_API_KEY"], { check: false });
    expect(raw.stdout).toBe("sk-ant-in-the-keyring-0123456789");
    // The daemon's side: read as the person, through the bus, and used by the LLM proxy.
    await openStoredValues({ exec, platform: "linux", env, configDir, home: dir, uid: process.getuid!() });
    const keys = hostKeySources({ raw: {}, vars: { HOME: dir } }, configDir);
    expect(credentialFor("anthropic", keys)?.headers["x-api-key"]).toBe("sk-ant-in-the-keyring-0123456789");
    expect(credentialFor("openai", keys)?.headers.authorization).toBe("Bearer sk-from-the-old-file-0123456789");
  });
});
