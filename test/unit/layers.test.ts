// No call goes back up a layer: the daemon calls the sandbox service, which calls the drivers, which call core and
// sys; none of them imports (at run time or for a type) a folder above it. What a lower layer needs of a higher one
// is an interface it declares itself and is handed (the service's SandboxHost, the guards' GuardContext).
import { expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");

/** Each folder, and the folders above it that it must not import (types included). */
const BELOW: Record<string, string[]> = {
  sandboxes: ["daemon", "guards", "agents", "cli", "client", "ui", "chat"],
  drivers: ["sandboxes", "daemon", "guards", "agents", "policy", "proxy", "bridge", "events", "cli", "client", "ui", "chat"],
  guards: ["daemon", "sandboxes", "agents", "cli", "client", "ui", "chat"],
  agents: ["daemon", "cli", "client"],
};

/** Folders that import nothing outside themselves but these. */
const ONLY: Record<string, string[]> = {
  core: [],
  sys: ["core"],
};

/** Relative imports of a file (static, `import type`, re-exports and `await import()`), as paths under src/. */
function importsOf(text: string, file: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](\.{1,2}\/[^"']+)["']/g)) {
    const p = resolve(dirname(file), m[1]!);
    const hit = [p, `${p}.ts`, join(p, "index.ts")].find((c) => existsSync(c) && statSync(c).isFile());
    if (hit?.startsWith(`${SRC}/`)) out.push(relative(SRC, hit));
  }
  return out;
}

/** Every import that goes up a layer, as `from → to`. */
function upward(files: { path: string; text: string }[], importsOfFile: (text: string, path: string) => string[]): string[] {
  const bad: string[] = [];
  for (const { path, text } of files) {
    const dir = path.split("/")[0]!;
    for (const to of importsOfFile(text, path)) {
      const target = to.split("/")[0]!;
      if (target === dir) continue;
      if (BELOW[dir]?.includes(target) || (ONLY[dir] && !ONLY[dir]!.includes(target))) bad.push(`${path} → ${to}`);
    }
  }
  return bad;
}

test("no import goes back up a layer (daemon → sandboxes → drivers → core/sys; guards and agents below the daemon)", () => {
  const files = [...new Bun.Glob("**/*.ts").scanSync(SRC)].filter((p) => !p.endsWith(".d.ts")).map((path) => ({ path, text: readFileSync(join(SRC, path), "utf8") }));
  expect(upward(files, (text, path) => importsOf(text, join(SRC, path)))).toEqual([]);
});

test("the check sees a call back up: the service importing the daemon's guard host, even for a type", () => {
  const files = [{ path: "sandboxes/service.ts", text: 'import type { GuardHost } from "../daemon/guard-host";' }];
  expect(upward(files, () => ["daemon/guard-host.ts"])).toEqual(["sandboxes/service.ts → daemon/guard-host.ts"]);
  expect(upward([{ path: "core/x.ts", text: "" }], () => ["sys/paths.ts"])).toEqual(["core/x.ts → sys/paths.ts"]);
});
