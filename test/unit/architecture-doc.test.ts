// ARCHITECTURE.md stays true where a newcomer follows it: every file its walks (`sbx shell` and `sbx create` to the driver, an egress
// request through the proxy) name exists.
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");

const doc = readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8");
const walks = [...doc.matchAll(/^## One request, end to end: (.+)$/gm)].map((m) => ({ title: m[1]!, at: m.index! }));

test("the walks are there: `sbx shell NAME`, `sbx create NAME` and an egress request", () => {
  expect(walks.map((w) => w.title)).toEqual(expect.arrayContaining(["`sbx shell NAME`", "`sbx create NAME`", "an egress request"]));
});

for (const w of walks) {
  test(`every file the walk of ${w.title} names exists`, () => {
    const walk = doc.slice(w.at, doc.indexOf("\n## ", w.at + 1));
    const named = [...walk.matchAll(/`([A-Za-z0-9_.-]+\/[A-Za-z0-9_./-]+\.ts)`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(10);
    const missing = named.filter((p) => !existsSync(join(ROOT, "src", p)) && !existsSync(join(ROOT, p)));
    expect(missing).toEqual([]);
  });
}
