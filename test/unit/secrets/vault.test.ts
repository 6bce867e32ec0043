// The vaults keep a value where the person keeps secrets, and never put it on a command line: the keychain through a model
// of `security` (items by service and account; `-i` reads commands on stdin; 44 for an item not found), the file for real.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chooseVault, fileVault, keychainAddLine, keychainVault, moveFileSecrets } from "../../../src/secrets/vault";
import { FakeExec } from "../../fakes/exec";
import { fakeSecurity } from "../../fakes/security";

describe("vault: the keychain", () => {
  test("set, get, replace and remove, with the value never on argv", async () => {
    const { exec } = fakeSecurity();
    const v = keychainVault(exec);
    const value = `tok "with" spaces\\and quotes ${"x".repeat(40)}`;
    expect(await v.get("NPM_TOKEN")).toBeNull();
    await v.set("NPM_TOKEN", value);
    expect(await v.get("NPM_TOKEN")).toBe(value);
    await v.set("NPM_TOKEN", "second");
    expect(await v.get("NPM_TOKEN")).toBe("second");
    expect(await v.remove("NPM_TOKEN")).toBe(true);
    expect(await v.remove("NPM_TOKEN")).toBe(false);
    for (const c of exec.calls) for (const a of c.argv) expect(a.includes("with") || a.includes("second")).toBe(false);
  });

  test("the stored line is hex: a value with a newline cannot add a second command", () => {
    const line = keychainAddLine("X", "v\ndelete-keychain login.keychain");
    expect(line.split("\n").filter(Boolean)).toHaveLength(1);
    expect(line).not.toContain("delete-keychain");
  });
});

describe("vault: the file, and moving out of it", () => {
  test("entries move to the other vault once, read back equal, and leave the file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-vault-"));
    try {
      const file = join(dir, "secrets.json");
      const f = fileVault(file);
      await f.set("A_TOKEN", "aaaaaaaaaaaaaaaa");
      await f.set("B_TOKEN", "bbbbbbbbbbbbbbbb");
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const { exec } = fakeSecurity();
      const k = keychainVault(exec);
      expect((await moveFileSecrets(file, k)).sort()).toEqual(["A_TOKEN", "B_TOKEN"]);
      expect(await k.get("A_TOKEN")).toBe("aaaaaaaaaaaaaaaa");
      expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({});
      expect(await moveFileSecrets(file, k)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a value the other vault does not give back stays in the file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-vault-"));
    try {
      const file = join(dir, "secrets.json");
      writeFileSync(file, JSON.stringify({ A_TOKEN: "aaaaaaaaaaaaaaaa" }), { mode: 0o600 });
      const lossy = { ...fileVault(join(dir, "other.json")), kind: "keychain" as const, get: async () => "truncated" };
      await expect(moveFileSecrets(file, lossy)).rejects.toThrow(/stays in/);
      expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ A_TOKEN: "aaaaaaaaaaaaaaaa" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("vault: which one", () => {
  test("a Mac uses the keychain; Linux without a session bus the file; with one that answers, the Secret Service", async () => {
    expect((await chooseVault(new FakeExec(), { platform: "darwin", env: {}, file: "/f" })).vault.kind).toBe("keychain");
    expect((await chooseVault(new FakeExec(), { platform: "linux", env: {}, file: "/f" })).vault.kind).toBe("file");
    const answers = new FakeExec().expect((a) => a[0] === "secret-tool", { exitCode: 1 });
    expect((await chooseVault(answers, { platform: "linux", env: { DBUS_SESSION_BUS_ADDRESS: "unix:path=/x" }, file: "/f" })).vault.kind).toBe("secret-service");
    const missing = new FakeExec().expect((a) => a[0] === "secret-tool", { exitCode: 127, stderr: "not found" });
    const c = await chooseVault(missing, { platform: "linux", env: { DBUS_SESSION_BUS_ADDRESS: "unix:path=/x" }, file: "/f" });
    expect(c.vault.kind).toBe("file");
    expect(c.why).toContain("libsecret-tools");
    const locked = new FakeExec().expect((a) => a[0] === "secret-tool", { exitCode: 1, stderr: "secret-tool: Cannot prompt\n" });
    expect((await chooseVault(locked, { platform: "linux", env: { DBUS_SESSION_BUS_ADDRESS: "unix:path=/x" }, file: "/f" })).vault.kind).toBe("file");
  });
});
