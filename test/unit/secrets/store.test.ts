// The host secrets file: 0600, atomic, names validated, list shows names only (the verb: test/unit/cli/secret.test.ts).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listSecretNames, readSecrets, removeSecret, setSecret } from "../../../src/secrets/store";

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
