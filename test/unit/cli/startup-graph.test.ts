// What `sbx --version` (and every verb before it runs) loads: the static import graph of the CLI's entry. Start-up is
// kept fast by what is not loaded (zod alone cost every command ~15 ms once; a verb importing it at load made start-up
// 41 ms for a while), so this checks the graph, not a time: no heavy package, none of the daemon's side, and no more
// modules than the budget without someone saying why here.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../../..");
const ENTRY = join(ROOT, "src/cli/main.ts");

/** Packages and dirs the entry's graph must never reach at load (verbs load them in `run`, through `await import`). */
const NEVER = [/^zod$/, /^hono/, /^bun:sqlite$/, /^src\/(store|daemon|proxy|bridge|sandboxes|drivers|policy|llm|ui|chat|secrets|tls)\//];
/** The modules the graph holds today, plus a little room; a change past it says in its commit why start-up needs more. */
const BUDGET = 72;

/** Static, value imports of a file (not `import type`, not `await import(…)`), resolved: repo-relative paths or bare names. */
function importsOf(file: string): string[] {
  const src = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of src.matchAll(/^\s*(import|export)\s+(?!type\b)([^'";]*?\s+from\s+)?["']([^"']+)["'];?/gm)) {
    const clause = m[2] ?? "";
    // `import { type A, type B } from` loads nothing either.
    const names = /\{([^}]*)\}/.exec(clause)?.[1];
    if (names !== undefined && !/\*|^\s*\w/.test(clause.replace(/\{[^}]*\}/, "").replace(/from\s*$/, "").trim() || "") && names.split(",").every((n) => n.trim() === "" || n.trim().startsWith("type "))) continue;
    const spec = m[3]!;
    if (!spec.startsWith(".")) {
      out.push(spec);
      continue;
    }
    const base = resolve(dirname(file), spec);
    const hit = [base, `${base}.ts`, join(base, "index.ts")].find((p) => existsSync(p) && p.endsWith(".ts"));
    if (hit) out.push(relative(ROOT, hit));
  }
  return out;
}

function graph(entries: readonly string[] = ["src/cli/main.ts"]): Set<string> {
  const seen = new Set<string>(entries);
  const todo = [...entries];
  while (todo.length > 0) {
    const f = todo.pop()!;
    for (const dep of importsOf(join(ROOT, f))) {
      if (seen.has(dep)) continue;
      seen.add(dep);
      if (dep.startsWith("src/") || dep.startsWith("shims/")) todo.push(dep);
    }
  }
  return seen;
}

/** What a command loads before its verb runs: the entry, and every verb's module (a command loads its own: verb-loaders.ts). */
const AT_LOAD = ["src/cli/main.ts", "src/cli/verbs.ts"];

describe("cli-startup-graph: what every sbx command loads before its verb runs", () => {
  test("no heavy package and nothing of the daemon's side, in the entry or any verb's module", () => {
    const g = [...graph(AT_LOAD)];
    const bad = g.filter((m) => NEVER.some((r) => r.test(m)));
    expect(bad).toEqual([]);
  });
  test(`at most ${BUDGET} modules, every verb's included`, () => {
    const g = [...graph(AT_LOAD)].sort();
    expect({ count: g.length, within: g.length <= BUDGET, modules: g.length > BUDGET ? g : [] }).toMatchObject({ within: true });
  });
  test("the check sees an import that would load zod (it reads what a verb imports at load)", () => {
    const g = graph(AT_LOAD);
    // verbs.ts imports every verb; each verb module is in the graph, so a verb importing zod at load would be seen.
    expect(g.has("src/cli/verbs.ts")).toBe(true);
    expect(g.has("src/cli/commands/secret.ts")).toBe(true);
    expect(importsOf(join(ROOT, "src/cli/commands/secret.ts"))).not.toContain("zod");
  });
  test("the entry alone loads no verb: a command loads the one it names (verb-loaders.ts), not the table", () => {
    const g = graph();
    expect([...g].filter((m) => m === "src/cli/verbs.ts" || m.startsWith("src/cli/commands/"))).toEqual([]);
  });
});

// `sbx run AGENT NAME` without a terminal (scripts, CI, the agent-ready bench): what run.ts loads on that path with
// `await import(…)` before the daemon answers. The client library (zod, every schema) is the slow path's alone: it cost
// this path more than the rest of the CLI's part (issue 42).
const PIPED_AGENT_PATH = ["src/core/secret-names.ts", "src/secrets/stored-names.ts", "src/client/where.ts", "src/client/names.ts", "src/client/guard-name.ts", "src/client/quick.ts", "src/client/build-progress.ts"];

describe("cli-startup-graph: `sbx run AGENT NAME` piped", () => {
  test("loads no zod and no client library", () => {
    const src = readFileSync(join(ROOT, "src/cli/commands/run.ts"), "utf8");
    // Each module of the list is one run.ts really loads.
    for (const m of PIPED_AGENT_PATH) expect(src).toContain(`"../../${m.replace(/^src\//, "").replace(/\.ts$/, "")}"`);
    const g = [...graph(PIPED_AGENT_PATH)];
    expect(g.filter((m) => m === "zod" || m === "src/client/client.ts" || m === "src/client/sandboxes.ts" || m === "src/secrets/stored.ts")).toEqual([]);
  });
});
