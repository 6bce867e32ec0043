// The CLI's zod-free reading of the stored secrets' names (`sbx run AGENT`'s note) says what secrets/stored.ts says, and
// nothing where stored.ts refuses the file.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { storedNames } from "../../../src/secrets/stored";
import { storedNamesQuick } from "../../../src/secrets/stored-names";

const root = mkdtempSync(join(tmpdir(), "sbx-stored-names-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
function dir(files: Record<string, string>): string {
  const d = join(root, `c${n++}`);
  mkdirSync(d);
  for (const [f, text] of Object.entries(files)) writeFileSync(join(d, f), text);
  return d;
}
const both = (d: string) => {
  let full: string[] | null;
  try {
    full = storedNames(d);
  } catch {
    full = null;
  }
  return { full, quick: storedNamesQuick(d) };
};

describe("stored names without zod agree with stored.ts", () => {
  test.each([
    ["no file", {}],
    ["sbx's file", { "secrets.json": JSON.stringify({ GH_TOKEN: "a", ANTHROPIC_API_KEY: "b" }) }],
    ["a vault's record", { "secrets-vault.json": JSON.stringify({ vault: "secret-service", names: ["ZED", "ANTHROPIC_API_KEY"], changedAt: 1 }), "secrets.json": JSON.stringify({ OLD: "x" }) }],
    ["a file that is not a map of strings", { "secrets.json": JSON.stringify({ A: 1 }) }],
    ["a file that is not JSON", { "secrets.json": "{" }],
    ["a record with a bad name", { "secrets-vault.json": JSON.stringify({ vault: "keychain", names: ["lower"], changedAt: 1 }) }],
    ["a record without its stamp", { "secrets-vault.json": JSON.stringify({ vault: "keychain", names: ["A"] }) }],
    ["a record of an unknown vault", { "secrets-vault.json": JSON.stringify({ vault: "other", names: [], changedAt: 1 }) }],
  ])("%s", (_what, files) => {
    const { full, quick } = both(dir(files));
    expect(quick).toEqual(full);
  });
});
