// The house has no circles: no chain of (runtime) imports between the directories of src/ leads back to where it
// started, so each one can be read, tested and replaced from its dependencies up. Type-only imports are not counted.
import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");

function tsFiles(d: string): string[] {
  return readdirSync(d).flatMap((n) => {
    const p = join(d, n);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith(".ts") && !p.endsWith(".d.ts") ? [p] : [];
  });
}

/** Directory → the directories its files import at run time (static imports and `await import()`, not `import type`). */
function graph(): Map<string, Map<string, string>> {
  const dirOf = (f: string) => relative(SRC, f).split("/")[0]!;
  const g = new Map<string, Map<string, string>>();
  for (const f of tsFiles(SRC)) {
    const text = readFileSync(f, "utf8");
    const specs = [
      ...[...text.matchAll(/^import\s+(?!type\b)[^;]*?from\s+["'](\.[^"']+)["']/gm)].map((m) => m[1]!),
      ...[...text.matchAll(/import\(\s*["'](\.[^"']+)["']\s*\)/g)].map((m) => m[1]!),
    ];
    for (const spec of specs) {
      const p = resolve(dirname(f), spec);
      const t = [p, `${p}.ts`, join(p, "index.ts")].find((c) => existsSync(c) && statSync(c).isFile());
      if (!t) continue;
      const [a, b] = [dirOf(f), dirOf(t)];
      if (a === b || a.endsWith(".ts") || b.endsWith(".ts")) continue;
      if (!g.has(a)) g.set(a, new Map());
      if (!g.get(a)!.has(b)) g.get(a)!.set(b, `${relative(SRC, f)} → ${relative(SRC, t)}`);
    }
  }
  return g;
}

/** Every cycle, each as the chain of imports that makes it. */
function cycles(g: Map<string, Map<string, string>>): string[] {
  const found: string[] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (n: string) => {
    state.set(n, "open");
    stack.push(n);
    for (const m of g.get(n)?.keys() ?? []) {
      if (state.get(m) === "open") {
        const loop = [...stack.slice(stack.indexOf(m)), m];
        found.push(loop.slice(0, -1).map((x, i) => g.get(x)!.get(loop[i + 1]!)!).join("  ⟶  "));
      } else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, "done");
  };
  for (const n of g.keys()) if (!state.has(n)) visit(n);
  return found;
}

test("no circle between the directories of src/", () => {
  expect(cycles(graph())).toEqual([]);
});

test("the check sees a circle when there is one", () => {
  const g = new Map([
    ["a", new Map([["b", "a/x.ts → b/y.ts"]])],
    ["b", new Map([["a", "b/y.ts → a/z.ts"]])],
  ]);
  expect(cycles(g)).toEqual(["a/x.ts → b/y.ts  ⟶  b/y.ts → a/z.ts"]);
});
