// The host secrets file: 0600, atomic, names validated, list shows names only; and the secret verb reads values from stdin.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listSecretNames, readSecrets, removeSecret, setSecret } from "../../../src/secrets/store";
import { runSecret } from "../../../src/cli/commands/secret";
import type { CliContext } from "../../../src/cli/verb";
import { createRender } from "../../../src/cli/render";

const made: string[] = [];
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));
/** A temp dir removed after the file's tests. */
const tempDir = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
};
const tmp = () => join(tempDir("sbx-secrets-"), "config", "secrets.json");

describe("secrets file", () => {
  test("set, list, rm; the file is 0600", () => {
    const f = tmp();
    setSecret(f, "GH_TOKEN", "abc");
    setSecret(f, "ANTHROPIC_API_KEY", "def");
    expect(statSync(f).mode & 0o777).toBe(0o600);
    expect(listSecretNames(f)).toEqual(["ANTHROPIC_API_KEY", "GH_TOKEN"]);
    expect(readSecrets(f).GH_TOKEN).toBe("abc");
    expect(removeSecret(f, "GH_TOKEN")).toBe(true);
    expect(removeSecret(f, "GH_TOKEN")).toBe(false);
    expect(listSecretNames(f)).toEqual(["ANTHROPIC_API_KEY"]);
  });
  test("bad names and empty values are refused", () => {
    const f = tmp();
    expect(() => setSecret(f, "lower", "x")).toThrow();
    expect(() => setSecret(f, "A", "")).toThrow();
  });
});

function ctx(configDir: string, stdinIsTTY = false) {
  const out: string[] = [];
  const err: string[] = [];
  const render = createRender({ stdout: (s) => out.push(s), stderr: (s) => err.push(s), stdoutIsTTY: false, stderrIsTTY: false }, { NO_COLOR: "1" });
  const c = { paths: { configDir }, render, stdinIsTTY } as unknown as CliContext;
  return { c, out, err };
}

describe("sbx secret", () => {
  test("set reads stdin (one trailing newline dropped); list prints names only", async () => {
    const dir = tempDir("sbx-secret-verb-");
    const { c, out } = ctx(dir);
    expect(await runSecret(c, ["set", "GH_TOKEN"], {}, async () => "ghp_value\n")).toBe(0);
    expect(readSecrets(join(dir, "secrets.json")).GH_TOKEN).toBe("ghp_value");
    await runSecret(c, ["list"], {}, async () => "");
    expect(out.join("")).toBe("GH_TOKEN\n");
    expect(readFileSync(join(dir, "secrets.json"), "utf8")).toContain("ghp_value");
  });
  test("set refuses a terminal stdin (the value would be typed in the clear)", async () => {
    const { c } = ctx(tempDir("sbx-secret-verb-"), true);
    await expect(runSecret(c, ["set", "GH_TOKEN"], {}, async () => "x")).rejects.toThrow("stdin");
  });
  test("rm of a missing secret is not_found", async () => {
    const { c } = ctx(tempDir("sbx-secret-verb-"));
    await expect(runSecret(c, ["rm", "NOPE"], {}, async () => "")).rejects.toThrow("no secret named NOPE");
  });
});
