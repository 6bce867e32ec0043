// one-owner: a sandbox's row (its state, identity, last use; made and purged) is written by src/sandboxes/ and by no
// other part of sbx, so what a sandbox is can be read in one place; the daemon and the rest call the service.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../../src");
const WRITES = /\.(createSandbox|setSandboxState|touchSandbox|purgeSandbox|updateIdentity)\(/g;

/** Files outside src/sandboxes/ that may write a row anyway, and why. */
const EXCEPTIONS: Record<string, string> = {
  "policy/service.ts":
    "an approval of a bridge subject or a host service is decided with the setting it grants (identity's bridge, publish) in one store transaction",
};

/** Every write of a sandbox row outside its owner, as `file: call`. */
function writersOutside(files: { path: string; text: string }[]): string[] {
  return files.flatMap(({ path, text }) => {
    if (path.startsWith("sandboxes/") || path.startsWith("store/") || EXCEPTIONS[path]) return [];
    return [...text.matchAll(WRITES)].map((m) => `${path}: ${m[1]}`);
  });
}

test("one-owner: no file outside src/sandboxes/ writes a sandbox's row", () => {
  const files = [...new Bun.Glob("**/*.ts").scanSync(SRC)].map((path) => ({ path, text: readFileSync(join(SRC, path), "utf8") }));
  expect(writersOutside(files)).toEqual([]);
});

test("one-owner: the check sees a write where there is one (the daemon marking a sandbox stopped itself)", () => {
  expect(writersOutside([{ path: "daemon/daemon.ts", text: "rows.setSandboxState(row.id, \"stopped\");" }])).toEqual(["daemon/daemon.ts: setSandboxState"]);
});

test("every exception names a file that exists and says why", () => {
  for (const [f, why] of Object.entries(EXCEPTIONS)) {
    expect(readFileSync(join(SRC, f), "utf8")).toMatch(WRITES);
    expect(why.length).toBeGreaterThan(20);
  }
});
