// Where sbx's stored secrets are kept (secrets/stored.ts), against a model of macOS's `security`: what sbx's file held
// moves into the keychain once and is said, a move cut short leaves every value in one place, a recorded vault is never
// quietly replaced by the file, and the daemon's readers (the LLM proxy's keys) see what the keychain holds, changed or
// removed, from the next request. The same against a real Secret Service: test/integration/secrets/secret-service.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runSecret, type SecretInput } from "../../../src/cli/commands/secret";
import { createRender } from "../../../src/cli/render";
import type { CliContext } from "../../../src/cli/verb";
import { credentialFor, hostKeySources } from "../../../src/llm/keys";
import { openStoredValues, readVaultRecord, Shelf, StoredValues, storedValues, vaultRecordFile, type VaultAccess } from "../../../src/secrets/stored";
import { readSecrets } from "../../../src/secrets/store";
import { fakeSecurity } from "../../fakes/security";
import { FakeExec } from "../../fakes/exec";

const made: string[] = [];
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));

function setup(platform = "darwin", exec: FakeExec = fakeSecurity().exec, raw: Record<string, string> = {}) {
  const configDir = mkdtempSync(join(tmpdir(), "sbx-stored-"));
  made.push(configDir);
  const out: string[] = [];
  const err: string[] = [];
  const render = createRender({ stdout: (s) => out.push(s), stderr: (s) => err.push(s), stdoutIsTTY: false, stderrIsTTY: false }, { NO_COLOR: "1" });
  // uid 4242: no /run/user/4242/bus on this machine, so no Secret Service is found by accident.
  const env = { platform, raw, vars: { HOME: configDir }, uid: 4242 };
  const ctx = { paths: { configDir }, env, exec, render, stdinIsTTY: false } as unknown as CliContext;
  const access: VaultAccess = { exec, platform, env: raw, configDir, home: configDir, uid: 4242 };
  return { ctx, out, err, configDir, access, file: join(configDir, "secrets.json") };
}
const piped = (text: string): SecretInput => ({ stdin: async () => text, hidden: () => Promise.reject(new Error("prompted off a terminal")) });

describe("secrets-where-kept: the CLI keeps values in the person's vault", () => {
  test("on a Mac, what sbx's file held moves into the keychain once, is said, and the file lets go; the record holds names only", async () => {
    const sec = fakeSecurity();
    const s = setup("darwin", sec.exec);
    writeFileSync(s.file, JSON.stringify({ A_TOKEN: "aaaa-1111-value", B_TOKEN: "bbbb-2222-value" }), { mode: 0o600 });
    expect(await runSecret(s.ctx, ["set", "C_TOKEN"], {}, piped("cccc-3333-value\n"))).toBe(0);
    const said = s.err.join("");
    expect(said).toContain("moved 2 secrets (A_TOKEN, B_TOKEN) out of");
    expect(said).toContain("into the login keychain");
    expect(said).toContain("stored C_TOKEN in the login keychain");
    // Items are this config dir's (another sbx setup's items never match).
    const service = `sbx:${s.configDir}`;
    expect(sec.items.get(`${service}\0A_TOKEN`)).toBe("aaaa-1111-value");
    expect(sec.items.get(`${service}\0C_TOKEN`)).toBe("cccc-3333-value");
    expect(readSecrets(s.file)).toEqual({});
    expect(readVaultRecord(s.configDir)!.names).toEqual(["A_TOKEN", "B_TOKEN", "C_TOKEN"]);
    const record = readFileSync(vaultRecordFile(s.configDir), "utf8");
    for (const v of ["aaaa-1111", "bbbb-2222", "cccc-3333"]) expect(record).not.toContain(v);
    // Once: a second set moves nothing and says nothing of it.
    s.err.length = 0;
    await runSecret(s.ctx, ["set", "D_TOKEN"], {}, piped("dddd"));
    expect(s.err.join("")).not.toContain("moved");
    // list shows names and where, never a value.
    s.out.length = 0;
    await runSecret(s.ctx, ["list"], { json: true }, piped(""));
    const rows = JSON.parse(s.out.join("")) as { name: string; keptIn: string }[];
    expect(rows.map((r) => r.name)).toEqual(["A_TOKEN", "B_TOKEN", "C_TOKEN", "D_TOKEN"]);
    expect(rows[0]!.keptIn).toBe("the login keychain");
    expect(s.out.join("")).not.toContain("aaaa");
    // rm takes it out of the keychain and the record.
    await runSecret(s.ctx, ["rm", "A_TOKEN"], {}, piped(""));
    expect(sec.items.has(`${service}\0A_TOKEN`)).toBe(false);
    expect(readVaultRecord(s.configDir)!.names).toEqual(["B_TOKEN", "C_TOKEN", "D_TOKEN"]);
  });

  test("a move cut short takes back what it copied: every value stays in the file and nothing is recorded", async () => {
    const sec = fakeSecurity();
    let adds = 0;
    const failing = new FakeExec().always(["security", "-i"], () => (++adds === 2 ? { exitCode: 1, stderr: "security: SecKeychainItemCreateFromContent: User interaction is not allowed.\n" } : {}));
    // The rest of `security` as the model has it.
    const exec = new Proxy(sec.exec, { get: (t, k) => (k === "run" ? (argv: string[], o: Parameters<FakeExec["run"]>[1]) => (argv[1] === "-i" ? failing.run(argv, o).then((r) => (r.exitCode === 0 ? t.run(argv, o) : r)) : t.run(argv, o)) : Reflect.get(t, k)) });
    const s = setup("darwin", exec as FakeExec);
    writeFileSync(s.file, JSON.stringify({ A_TOKEN: "aaaa-1111-value", B_TOKEN: "bbbb-2222-value" }), { mode: 0o600 });
    await expect(runSecret(s.ctx, ["set", "C_TOKEN"], {}, piped("cccc"))).rejects.toThrow(/storing B_TOKEN in the keychain failed/);
    expect(readSecrets(s.file)).toEqual({ A_TOKEN: "aaaa-1111-value", B_TOKEN: "bbbb-2222-value" });
    expect(existsSync(vaultRecordFile(s.configDir))).toBe(false);
    expect([...sec.items.keys()]).toEqual([]);
  });

  test("a recorded Secret Service is never replaced by the file: a shell with no bus is refused, with the fix", async () => {
    const s = setup("linux", new FakeExec());
    writeFileSync(vaultRecordFile(s.configDir), JSON.stringify({ vault: "secret-service", names: ["A_TOKEN"], changedAt: 1 }), { mode: 0o600 });
    await expect(runSecret(s.ctx, ["set", "B_TOKEN"], {}, piped("bbbb"))).rejects.toThrow(/Secret Service, and no session bus is known here/);
    expect(existsSync(s.file)).toBe(false);
  });

  test("SBX_SECRETS_VAULT=file keeps a throwaway setup's secrets in its own file though the keychain is on offer", async () => {
    const sec = fakeSecurity();
    const s = setup("darwin", sec.exec, { SBX_SECRETS_VAULT: "file" });
    await runSecret(s.ctx, ["set", "A_TOKEN"], {}, piped("aaaa"));
    expect(readSecrets(s.file)).toEqual({ A_TOKEN: "aaaa" });
    expect(sec.items.size).toBe(0);
    expect(existsSync(vaultRecordFile(s.configDir))).toBe(false);
  });

  test("with no record and no vault on offer, the file is the vault, as before (nothing recorded, nothing moved)", async () => {
    const s = setup("linux", new FakeExec());
    await runSecret(s.ctx, ["set", "A_TOKEN"], {}, piped("aaaa"));
    expect(readSecrets(s.file)).toEqual({ A_TOKEN: "aaaa" });
    expect(existsSync(vaultRecordFile(s.configDir))).toBe(false);
  });
});

describe("secrets-where-kept: the daemon reads them there, and a change takes effect on the next request", () => {
  test("the LLM proxy's key comes from the keychain; set again or removed, the next lookup has it", async () => {
    const sec = fakeSecurity();
    const s = setup("darwin", sec.exec);
    const { shelf } = await Shelf.open(s.access);
    await shelf.set("ANTHROPIC_API_KEY", "sk-ant-keychain-value-1");
    const daemon = await openStoredValues(s.access);
    const keys = () => hostKeySources({ raw: {}, vars: { HOME: s.configDir } }, s.configDir);
    expect(storedValues(s.configDir).ANTHROPIC_API_KEY).toBe("sk-ant-keychain-value-1");
    expect(credentialFor("anthropic", keys())?.headers["x-api-key"]).toBe("sk-ant-keychain-value-1");
    // `sbx secret set` writes the record and asks the daemon to read again (the /v1/secrets/reload route) and waits.
    await shelf.set("ANTHROPIC_API_KEY", "sk-ant-keychain-value-2");
    await daemon.reload();
    expect(credentialFor("anthropic", keys())?.headers["x-api-key"]).toBe("sk-ant-keychain-value-2");
    await shelf.remove("ANTHROPIC_API_KEY");
    await daemon.reload();
    expect(credentialFor("anthropic", keys())).toBeUndefined();
  });

  test("without the daemon being told, a changed record is read again on the next use", async () => {
    const sec = fakeSecurity();
    const s = setup("darwin", sec.exec);
    const { shelf } = await Shelf.open(s.access);
    await shelf.set("GH_TOKEN", "ghp_first_value_0000");
    const v = new StoredValues({ access: s.access });
    await v.reload();
    expect(v.all().GH_TOKEN).toBe("ghp_first_value_0000");
    await shelf.set("GH_TOKEN", "ghp_second_value_000");
    // The async reader waits for the read; the synchronous one starts it and has it by the next call.
    expect(await v.get("GH_TOKEN")).toBe("ghp_second_value_000");
    await shelf.set("GH_TOKEN", "ghp_third_value_0000");
    v.all();
    await v.reload();
    expect(v.all().GH_TOKEN).toBe("ghp_third_value_0000");
  });

  test("a vault that fails a read keeps the last value and logs the name, never the value", async () => {
    const sec = fakeSecurity();
    const s = setup("darwin", sec.exec);
    const { shelf } = await Shelf.open(s.access);
    await shelf.set("GH_TOKEN", "ghp_kept_value_00000");
    const logged: string[] = [];
    let locked = false;
    const exec = new Proxy(sec.exec, { get: (t, k) => (k === "run" ? (argv: string[], o: Parameters<FakeExec["run"]>[1]) => (locked ? Promise.resolve({ exitCode: 36, stdout: "", stderr: "security: the keychain is locked\n" }) : t.run(argv, o)) : Reflect.get(t, k)) });
    const v = new StoredValues({ access: { ...s.access, exec: exec as FakeExec }, log: (m, f) => logged.push(`${m} ${JSON.stringify(f)}`) });
    await v.reload();
    locked = true;
    await v.reload();
    expect(v.all().GH_TOKEN).toBe("ghp_kept_value_00000");
    expect(logged.join("\n")).toContain("GH_TOKEN");
    expect(logged.join("\n")).not.toContain("ghp_kept");
  });
});
