// A build's progress as a person sees it, through the real CLI on a real engine: at a terminal one line rewritten
// per step; under --json (at a terminal too) and piped, one line per step, and stdout holds only the JSON.
// Its own throwaway user and repo, removed after.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createTestUser, type TestUser } from "../../support/test-user";
import { BASE_IMAGE, CLI, canRun, ownRepo, removeOwnWorld, skipReason } from "./fixture";

const hasScript = Bun.spawnSync(["sh", "-c", "command -v script"]).exitCode === 0;
const run = canRun && hasScript;
const why = !canRun ? skipReason : "script(1) is not installed";
const STEPS = ["FROM sbx-base:bookworm", "RUN echo one > /etc/one", "RUN echo two > /etc/two"];

describe.skipIf(!run)(`build progress (Docker)${run ? "" : ` — skipped: ${why}`}`, () => {
  let user: TestUser;
  let repo = "";
  const sbx = (args: string[]) => user.run(["bun", CLI, ...args], { cwd: repo });
  /** sbx in a terminal (script(1)): everything the terminal was sent, and the exit code. */
  const atTerminal = (args: string[]) => {
    const line = [...user.prefix({ TERM: "xterm-256color" }), "bun", CLI, ...args].map((a) => `'${a}'`).join(" ");
    const r = Bun.spawnSync(["script", "-qec", line, "/dev/null"], { cwd: repo, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    return { code: r.exitCode, screen: r.stdout.toString() };
  };
  beforeAll(() => {
    user = createTestUser();
    repo = ownRepo(user, "bp", `${STEPS.join("\n").replace("sbx-base:bookworm", BASE_IMAGE)}\n`);
  }, 60_000);
  afterAll(async () => {
    if (!user) return;
    await removeOwnWorld(user, repo, () => {
      for (const n of ["tty", "ttyjson", "piped"]) sbx(["rm", "--force", n]);
    });
  }, 60_000);

  /** The step lines a screen shows as whole lines (each on a line of its own). */
  const stepLines = (text: string) => text.split(/\r?\n/).filter((l) => l.includes("building the image: step")).map((l) => l.trim());
  const wanted = (of: number) => STEPS.map((s, i) => `building the image: step ${i + 1}/${of}: ${s}`);

  test("at a terminal: one line, rewritten in place at each step", () => {
    const r = atTerminal(["create", "tty"]);
    expect({ code: r.code, screen: r.code === 0 ? "" : r.screen }).toEqual({ code: 0, screen: "" });
    const rewrites = r.screen.split("\r\x1b[K").slice(1).map((s) => s.split(/\r?\n/)[0]!);
    const of = Number(/step 1\/(\d+)/.exec(r.screen)?.[1]);
    expect(rewrites.slice(0, STEPS.length)).toEqual(wanted(of));
  }, 120_000);

  test("--json at a terminal: a line per step (nothing rewritten), then the JSON", () => {
    const r = atTerminal(["create", "--rebuild", "--json", "ttyjson"]);
    expect({ code: r.code, screen: r.code === 0 ? "" : r.screen }).toEqual({ code: 0, screen: "" });
    expect(r.screen).not.toContain("\x1b[K");
    const of = Number(/step 1\/(\d+)/.exec(r.screen)?.[1]);
    expect(stepLines(r.screen).slice(0, STEPS.length)).toEqual(wanted(of));
    expect(r.screen).toContain('"name": "ttyjson"');
  }, 120_000);

  test("--json piped: a line per step on stderr, only the JSON on stdout", () => {
    const r = sbx(["create", "--rebuild", "--json", "piped"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    const of = Number(/step 1\/(\d+)/.exec(r.stderr)?.[1]);
    expect(stepLines(r.stderr).slice(0, STEPS.length)).toEqual(wanted(of));
    expect(JSON.parse(r.stdout)).toMatchObject({ name: "piped", state: "running" });
  }, 120_000);
});
