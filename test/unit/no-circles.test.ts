// The house has no circles: no chain of imports between the directories of src/, nor between its files, leads back to
// where it started, so each one can be read, tested and replaced from its dependencies up. Type-only imports and
// re-exports count: a type that two files need from each other belongs in a third.
import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");

function tsFiles(d: string): string[] {
  return readdirSync(d).flatMap((n) => {
    const p = join(d, n);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith(".ts") && !p.endsWith(".d.ts") ? [p] : [];
  });
}

/** Every relative import of a file (`import`, `import type`, `export … from`, `await import()`), resolved to a file. */
function importsOf(f: string): string[] {
  const text = readFileSync(f, "utf8");
  const specs = [
    ...[...text.matchAll(/^(?:import|export)\s+[^;]*?from\s+["'](\.[^"']+)["']/gm)].map((m) => m[1]!),
    ...[...text.matchAll(/import\(\s*["'](\.[^"']+)["']\s*\)/g)].map((m) => m[1]!),
  ];
  return specs.flatMap((spec) => {
    const p = resolve(dirname(f), spec);
    const t = [p, `${p}.ts`, join(p, "index.ts")].find((c) => existsSync(c) && statSync(c).isFile());
    return t ? [t] : [];
  });
}

/** `key` of each file → the keys of what it imports (a file's dir, or the file itself), each edge with the import that makes it. */
function graph(key: (file: string) => string): Map<string, Map<string, string>> {
  const g = new Map<string, Map<string, string>>();
  for (const f of tsFiles(SRC)) {
    for (const t of importsOf(f)) {
      const [a, b] = [key(f), key(t)];
      if (a === b || a.endsWith(".ts") !== b.endsWith(".ts")) continue;
      if (!g.has(a)) g.set(a, new Map());
      if (!g.get(a)!.has(b)) g.get(a)!.set(b, `${relative(SRC, f)} → ${relative(SRC, t)}`);
    }
  }
  return g;
}

const dirOf = (f: string) => relative(SRC, f).split("/")[0]!;
const fileOf = (f: string) => relative(SRC, f);

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

test("no circle between the directories of src/, types included", () => {
  expect(cycles(graph(dirOf))).toEqual([]);
});

test("no circle between the files of src/, types included", () => {
  expect(cycles(graph(fileOf))).toEqual([]);
});

test("the check sees a circle when there is one", () => {
  const g = new Map([
    ["a", new Map([["b", "a/x.ts → b/y.ts"]])],
    ["b", new Map([["a", "b/y.ts → a/z.ts"]])],
  ]);
  expect(cycles(g)).toEqual(["a/x.ts → b/y.ts  ⟶  b/y.ts → a/z.ts"]);
});

test("a type-only import and a re-export are edges too (the doctor's Check, the staged clone's type once made circles)", () => {
  const dir = mkdtempSync(join(tmpdir(), "sbx-circles-"));
  try {
    writeFileSync(join(dir, "a.ts"), 'import type { B } from "./b";\nexport type A = B;\n');
    writeFileSync(join(dir, "b.ts"), 'export type { A as B } from "./a";\n');
    expect(importsOf(join(dir, "a.ts"))).toEqual([join(dir, "b.ts")]);
    expect(importsOf(join(dir, "b.ts"))).toEqual([join(dir, "a.ts")]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
