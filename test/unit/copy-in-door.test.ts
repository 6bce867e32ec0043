// copy-in-scanned, kept by the house's shape: every way sbx puts host content into a sandbox goes through the one door
// (src/secrets/copy-in.ts). Its seams take only what it made (the `Scanned` type: the engine's archive upload, an
// overlay's view, the agent setup's plan, carried changes); this test keeps the other ways to copy from appearing
// elsewhere in src/, so a new copy-in site cannot skip the scan without this test (or a cast) saying so.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");
const DOOR = "secrets/copy-in.ts";

function tsFiles(d: string): string[] {
  return readdirSync(d).flatMap((n) => {
    const p = join(d, n);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith(".ts") ? [p] : [];
  });
}

/** What copies bytes somewhere, and the files allowed to use it besides the door (with why). */
const RULES: Array<{ what: RegExp; allowed: Record<string, string> }> = [
  // A tar is how files go into a container or a clone (`docker cp -`, `tar -x` inside): only the door builds one.
  { what: /\btarArchive\(/, allowed: { "core/tar.ts": "its definition" } },
  // A tar written piece by piece: an image's build context alone, of HEAD's tree (what the clone holds already, as
  // git holds it) and of the changes the door let through (`Scanned` entries).
  { what: /\btarHeader\(/, allowed: { "core/tar.ts": "its definition", "drivers/docker/build-context.ts": "HEAD's tree and the door's Scanned changes" } },
  // A copy of a file: only the door copies host files (views); the demo copies its own fixtures into its own demo repo.
  { what: /\b(?:copyFileSync|cpSync|copyFile|cp)\(/, allowed: { "demo/demo.ts": "its own fixtures into the demo's repo, not a sandbox", "demo/base-image.ts": "this machine's npm package (code, not the person's files) into the demo's throwaway image build dir" } },
  // The engine's archive upload: one caller, the seed, which hands it what the door's tar made.
  { what: /\.putArchive\(/, allowed: { "drivers/docker/docker.ts": "the seed (a Scanned tar)" } },
  // The Scanned type is made in the door alone: a cast to it elsewhere is a site that skipped the scan.
  { what: /as (?:unknown as )?Scanned</, allowed: { "agents/service.ts": "the plan the door scanned, its entries that lost a field dropped" } },
];

test("only the copy-in door copies host content into a sandbox", () => {
  const found: string[] = [];
  for (const f of tsFiles(SRC)) {
    const rel = relative(SRC, f);
    if (rel === DOOR) continue;
    const text = readFileSync(f, "utf8");
    for (const r of RULES) if (r.what.test(text) && r.allowed[rel] === undefined) found.push(`${rel}: ${r.what.source}`);
  }
  expect(found).toEqual([]);
});

test("the check sees a site that copies around the door", () => {
  const sample = 'import { tarArchive } from "../core/tar";\nconst t = tarArchive(entries);\n';
  expect(RULES[0]!.what.test(sample)).toBe(true);
  expect(RULES[4]!.what.test("const x = y as Scanned<Uint8Array>;")).toBe(true);
  expect(RULES[1]!.what.test("yield* tarHeader(e, size);")).toBe(true);
});
