// ARCHITECTURE.md stays true where a newcomer follows it: every file its walk from `sbx shell` to the driver names exists.
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");

test("every file the walk of `sbx shell NAME` names exists", () => {
  const doc = readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8");
  const start = doc.indexOf("## One request, end to end");
  expect(start).toBeGreaterThan(-1);
  const walk = doc.slice(start, doc.indexOf("\n## ", start + 1));
  const named = [...walk.matchAll(/`([A-Za-z0-9_.-]+\/[A-Za-z0-9_./-]+\.ts)`/g)].map((m) => m[1]!);
  expect(named.length).toBeGreaterThan(10);
  const missing = named.filter((p) => !existsSync(join(ROOT, "src", p)) && !existsSync(join(ROOT, p)));
  expect(missing).toEqual([]);
});
