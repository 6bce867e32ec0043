// A secret's value from the vault, a command or 1Password: read when needed, kept for its time to live and no longer,
// one run for requests that arrive together, and a refusal that names the secret and the fix.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isOpRef, parseTtl, SecretResolver } from "../../../src/secrets/sources";
import { createExec } from "../../../src/sys/exec";
import type { Vault } from "../../../src/secrets/vault";
import { FakeExec } from "../../fakes/exec";

const memVault = (init: Record<string, string> = {}): Vault => {
  const m = new Map(Object.entries(init));
  return { kind: "file", where: "the test's vault", get: async (n) => m.get(n) ?? null, set: async (n, v) => void m.set(n, v), remove: async (n) => m.delete(n) };
};

describe("secret sources: a command", () => {
  test("a real shell line runs once per time to live; after it, again", async () => {
    let now = 0;
    const dir = mkdtempSync(join(tmpdir(), "sbx-src-"));
    const r = new SecretResolver({ vault: memVault(), exec: createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }), now: () => now });
    const src = { kind: "command" as const, command: `echo x >> ${dir}/runs; echo token-$(wc -l < ${dir}/runs)`, ttlMs: 60_000 };
    expect(await r.value("GH_TOKEN", src)).toBe("token-1");
    now = 59_000;
    expect(await r.value("GH_TOKEN", src)).toBe("token-1");
    now = 61_000;
    expect(await r.value("GH_TOKEN", src)).toBe("token-2");
    r.forget("GH_TOKEN");
    expect(await r.value("GH_TOKEN", src)).toBe("token-3");
    rmSync(dir, { recursive: true, force: true });
  });

  test("requests that arrive together share one run", async () => {
    let runs = 0;
    const exec = new FakeExec().always((a) => a[0] === "/bin/sh", () => (runs++, { stdout: "v\n" }));
    const r = new SecretResolver({ vault: memVault(), exec });
    const src = { kind: "command" as const, command: "gh auth token", ttlMs: 1000 };
    expect(await Promise.all([r.value("T", src), r.value("T", src), r.value("T", src)])).toEqual(["v", "v", "v"]);
    expect(runs).toBe(1);
  });

  test("a failing command, an empty answer or several lines refuse with the secret's name and what to run", async () => {
    const cases: [string, RegExp][] = [
      ["echo nope >&2; exit 3", /GH_TOKEN: `echo nope >&2; exit 3` exited 3: nope/],
      ["true", /printed nothing/],
      ["printf 'a\\nb\\n'", /more than one line/],
    ];
    for (const [command, want] of cases) {
      const r = new SecretResolver({ vault: memVault(), exec: createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }) });
      await expect(r.value("GH_TOKEN", { kind: "command", command, ttlMs: 1000 })).rejects.toThrow(want);
    }
  });
});

describe("secret sources: the vault and 1Password", () => {
  test("the vault's value, or a refusal that says how to set it", async () => {
    const r = new SecretResolver({ vault: memVault({ A: "1234" }), exec: new FakeExec() });
    expect(await r.value("A", { kind: "vault" })).toBe("1234");
    const e = await r.value("B", { kind: "vault" }).catch((x) => x);
    expect(e.message).toContain("secret B has no value");
    expect(e.hint).toContain("sbx secret set B");
  });

  test("op read, and a clear refusal when op is missing or not signed in", async () => {
    const ok = new FakeExec().expect(["op", "read", "--no-newline", "op://dev/openai/key"], { stdout: "sk-abc" });
    expect(await new SecretResolver({ vault: memVault(), exec: ok }).value("K", { kind: "ref", ref: "op://dev/openai/key", ttlMs: 1 })).toBe("sk-abc");
    const missing = new FakeExec().expect((a) => a[0] === "op", { exitCode: 127 });
    await expect(new SecretResolver({ vault: memVault(), exec: missing }).value("K", { kind: "ref", ref: "op://dev/openai/key", ttlMs: 1 })).rejects.toThrow(/not installed/);
    const out = new FakeExec().expect((a) => a[0] === "op", { exitCode: 1, stderr: "[ERROR] You are not currently signed in.\n" });
    await expect(new SecretResolver({ vault: memVault(), exec: out }).value("K", { kind: "ref", ref: "op://dev/openai/key", ttlMs: 1 })).rejects.toThrow(/not currently signed in/);
  });

  test("time to live and reference syntax", () => {
    expect(parseTtl("55m")).toBe(3_300_000);
    expect(parseTtl("30s")).toBe(30_000);
    expect(parseTtl("0m")).toBeNull();
    expect(parseTtl("5 minutes")).toBeNull();
    expect(isOpRef("op://dev/openai/key")).toBe(true);
    expect(isOpRef("op://dev/openai/section/key")).toBe(true);
    expect(isOpRef("op://dev")).toBe(false);
    expect(isOpRef("https://dev/openai/key")).toBe(false);
  });
});
