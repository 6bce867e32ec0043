// A newcomer reads a file or a function whole: no file in src/ or shims/ over 600 lines, no function over 150, unless a
// one-line reason at its top says why it stays whole (`// whole: …`, the file's first comment lines or the line just
// above the function).
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import ts from "typescript";

const ROOT = resolve(import.meta.dir, "../..");
const MAX_FILE = 600;
const MAX_FUNCTION = 150;
const REASON = /^\s*\/\/ whole: \S/;

type Named = { path: string; text: string };

/** Files over the limit without a reason among their leading comment lines. */
export function longFiles(files: Named[]): string[] {
  const out: string[] = [];
  for (const { path, text } of files) {
    const lines = text.split("\n");
    const n = lines.length - (text.endsWith("\n") ? 1 : 0);
    if (n <= MAX_FILE) continue;
    const head: string[] = [];
    for (const l of lines) {
      if (!l.startsWith("//")) break;
      head.push(l);
    }
    if (!head.some((l) => REASON.test(l))) out.push(`${path}: ${n} lines`);
  }
  return out;
}

/** Functions (declarations, methods, arrows, function expressions) over the limit without a reason on the line above. */
export function longFunctions(files: Named[]): string[] {
  const out: string[] = [];
  for (const { path, text } of files) {
    const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
    const lines = text.split("\n");
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && "body" in node && node.body) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
        const len = end - start + 1;
        // The statement the function is written in (`export const f = () => …`, `x = function…`): its line above.
        let top = node as ts.Node;
        while (top.parent && !ts.isSourceFile(top.parent) && !ts.isBlock(top.parent) && !ts.isClassLike(top.parent) && !ts.isObjectLiteralExpression(top.parent) && !ts.isCallExpression(top.parent)) top = top.parent;
        const topLine = sf.getLineAndCharacterOfPosition(top.getStart(sf)).line;
        const above = [lines[topLine - 1] ?? "", lines[start - 1] ?? ""];
        if (len > MAX_FUNCTION && !above.some((l) => REASON.test(l))) {
          const name = (node as ts.FunctionLikeDeclaration).name?.getText(sf) ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText(sf) : "(anonymous)");
          out.push(`${path}:${start + 1} ${name}: ${len} lines`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out;
}

function sources(): Named[] {
  const out: Named[] = [];
  for (const dir of ["src", "shims"]) {
    for (const p of new Bun.Glob("**/*.ts").scanSync(join(ROOT, dir))) {
      if (p.endsWith(".d.ts")) continue;
      out.push({ path: `${dir}/${p}`, text: readFileSync(join(ROOT, dir, p), "utf8") });
    }
  }
  return out;
}

test(`no file in src/ or shims/ over ${MAX_FILE} lines without a reason at its top`, () => {
  expect(longFiles(sources())).toEqual([]);
});

test(`no function over ${MAX_FUNCTION} lines without a reason on the line above it`, () => {
  expect(longFunctions(sources())).toEqual([]);
});

test("the checks see a long file and a long function, and take a reason", () => {
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  x${i}();`).join("\n");
  const fn = `export function big() {\n${body(150)}\n}\n`;
  expect(longFunctions([{ path: "a.ts", text: fn }])).toEqual(["a.ts:1 big: 152 lines"]);
  expect(longFunctions([{ path: "a.ts", text: `// whole: one state machine read top to bottom\n${fn}` }])).toEqual([]);
  const arrow = `const make = () => {\n${body(150)}\n};\n`;
  expect(longFunctions([{ path: "b.ts", text: arrow }])).toEqual(["b.ts:1 make: 152 lines"]);
  const method = `class A {\n  run() {\n${body(150)}\n  }\n}\n`;
  expect(longFunctions([{ path: "c.ts", text: method }])).toEqual(["c.ts:2 run: 152 lines"]);
  const file = `// a file\n${body(600)}\n`;
  expect(longFiles([{ path: "d.ts", text: file }])).toEqual(["d.ts: 601 lines"]);
  expect(longFiles([{ path: "d.ts", text: `// a file\n// whole: generated table\n${body(600)}\n` }])).toEqual([]);
});
