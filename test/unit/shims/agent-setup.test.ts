// The in-sandbox agent setup: sbx's section put in (once, replaced on each start), first-run settings only where the
// person has none, nothing written outside $HOME or through a link, nothing of the person's lost to a parse error.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentSetupPlan } from "../../../src/core/agents";
import { apply, mergeDefaults, withInstructionSection, type Plan } from "../../../shims/agent-setup";

const root = mkdtempSync(join(tmpdir(), "sbx-agent-setup-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const home = () => {
  const h = join(root, `h${n++}`);
  mkdirSync(h);
  return h;
};

describe("withInstructionSection", () => {
  const sec = "<!-- sbx:begin x -->\nhello\n<!-- sbx:end -->\n";
  test("added after the person's own text, replaced in place the next time, the same text twice is no change", () => {
    const once = withInstructionSection("# mine\n", sec);
    expect(once).toBe(`# mine\n\n${sec}`);
    expect(withInstructionSection(once, sec)).toBe(once);
    const changed = withInstructionSection(`${once}after\n`, "<!-- sbx:begin y -->\nnew\n<!-- sbx:end -->\n");
    expect(changed).toBe("# mine\n\n<!-- sbx:begin y -->\nnew\n<!-- sbx:end -->\nafter\n");
    expect(withInstructionSection("", sec)).toBe(sec);
  });
});

describe("mergeDefaults", () => {
  test("adds what is missing, key by key; keeps every value the person set, whatever its type", () => {
    expect(mergeDefaults({ theme: "light", projects: { "/a": { x: 1 } } }, { theme: "dark", hasCompletedOnboarding: true, projects: { "/w": { trust: true } } })).toEqual({
      theme: "light",
      hasCompletedOnboarding: true,
      projects: { "/a": { x: 1 }, "/w": { trust: true } },
    });
    expect(mergeDefaults({ projects: "odd" }, { projects: { "/w": {} } })).toEqual({ projects: "odd" });
  });
});

describe("apply", () => {
  test("Claude's plan: the section in ~/.claude/CLAUDE.md and the first-run settings in ~/.claude.json, kept on the next start", () => {
    const h = home();
    writeFileSync(join(h, ".claude.json"), JSON.stringify({ theme: "light", numStartups: 3 }));
    const plan = agentSetupPlan("claude", "demo", "/w") as Plan;
    const warns: string[] = [];
    apply(plan, h, (m) => warns.push(m));
    apply(plan, h, (m) => warns.push(m));
    expect(warns).toEqual([]);
    expect(readFileSync(join(h, ".claude/CLAUDE.md"), "utf8")).toBe(plan.instructions.section);
    expect(JSON.parse(readFileSync(join(h, ".claude.json"), "utf8"))).toEqual({ theme: "light", numStartups: 3, hasCompletedOnboarding: true, bypassPermissionsModeAccepted: true, projects: { "/w": { hasTrustDialogAccepted: true } } });
  });

  test("a settings file that is not JSON is left as it is, with a warning", () => {
    const h = home();
    writeFileSync(join(h, ".claude.json"), "{ not json");
    const warns: string[] = [];
    apply(agentSetupPlan("claude", "demo", "/w") as Plan, h, (m) => warns.push(m));
    expect(readFileSync(join(h, ".claude.json"), "utf8")).toBe("{ not json");
    expect(warns).toEqual([".claude.json is not valid JSON; left alone"]);
  });

  test("never writes through a link: a symlinked instruction file or settings file is left alone, its target untouched", () => {
    const h = home();
    const target = join(root, `target-${n}`);
    writeFileSync(target, "outside\n");
    mkdirSync(join(h, ".claude"));
    symlinkSync(target, join(h, ".claude", "CLAUDE.md"));
    symlinkSync(target, join(h, ".claude.json"));
    const warns: string[] = [];
    apply(agentSetupPlan("claude", "demo", "/w") as Plan, h, (m) => warns.push(m));
    expect(readFileSync(target, "utf8")).toBe("outside\n");
    expect(warns.length).toBe(2);
  });

  test("a plan path that climbs out of $HOME or is absolute is refused before anything is written", () => {
    const h = home();
    for (const path of ["../escape.md", "/etc/escape.md", "a/../../escape.md"]) {
      expect(() => apply({ instructions: { path, section: "x" }, setup: [] }, h, () => undefined)).toThrow(/not a path under \$HOME/);
    }
    expect(existsSync(join(root, "escape.md"))).toBe(false);
  });
});
