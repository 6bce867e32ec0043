// The egress proxy and the rooms that record and show its decisions stay apart: the policy room and the feed read the
// proxy's events from core/egress-events.ts, never from the proxy, and the proxy knows nothing of them. Type-only
// imports count: a type is a dependency a reader has to follow too.
import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../../..");

function tsFiles(d: string): string[] {
  return readdirSync(d).flatMap((n) => {
    const p = join(d, n);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith(".ts") ? [p] : [];
  });
}

/** Every relative import of a file (static, `import type`, `await import()`), as a path from the repository root. */
function importsOf(file: string): string[] {
  const src = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of src.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](\.{1,2}\/[^"']+)["']/g)) {
    const p = resolve(dirname(file), m[1]!);
    const hit = [p, `${p}.ts`, join(p, "index.ts")].find((c) => existsSync(c) && statSync(c).isFile());
    if (hit) out.push(relative(ROOT, hit));
  }
  return out;
}

/** `from` dir → the dirs none of its files may import. */
const APART: [string, string[]][] = [
  ["src/policy/", ["src/proxy/"]],
  ["src/events/", ["src/proxy/"]],
  ["src/proxy/", ["src/policy/", "src/events/", "src/guards/", "src/daemon/", "src/store/"]],
];

for (const [from, never] of APART) {
  test(`${from} imports nothing of ${never.join(", ")}`, () => {
    const bad: string[] = [];
    for (const f of tsFiles(join(ROOT, from))) {
      for (const to of importsOf(f)) if (never.some((n) => to.startsWith(n))) bad.push(`${relative(ROOT, f)} → ${to}`);
    }
    expect(bad).toEqual([]);
  });
}

test("the check sees type-only imports (it would catch the policy room reaching for the proxy's types again)", () => {
  const guard = join(ROOT, "src/guards/proxy.ts");
  expect(readFileSync(guard, "utf8")).toMatch(/import type \{[^}]*\} from "\.\.\/core\/egress-events"/);
  expect(importsOf(guard)).toContain("src/core/egress-events.ts");
});
