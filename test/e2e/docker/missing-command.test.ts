// A command that is not in the sandbox is said as sbx says it, on a real engine through the real CLI: in a terminal
// session (the daemon's PTY, docker exec) and without one (the exec agent) alike, "sbx: CMD: command not found in
// sandbox NAME" and exit 127, never the engine's OCI runtime error or a shell's `exec: CMD: not found`.
// Its own throwaway user and repo (not the shared fixture's), removed with everything sbx made for them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createTestUser, type TestUser } from "../../support/test-user";
import { CLI, canRun, ownRepo, removeOwnWorld, skipReason } from "./fixture";

const hasScript = Bun.spawnSync(["sh", "-c", "command -v script"]).exitCode === 0;
const run = canRun && hasScript;
const why = !canRun ? skipReason : "script(1) is not installed";

/** What a terminal showed, as lines: script(1) echoes the tty's control bytes (^@ as it ends stdin) and CRs. */
function screenLines(bytes: Uint8Array): string[] {
  return new TextDecoder().decode(bytes).replaceAll("^@", "").replaceAll("\r", "").split("\n").map((l) => l.trim()).filter(Boolean);
}

describe.skipIf(!run)(`a missing command in a sandbox (Docker)${run ? "" : ` — skipped: ${why}`}`, () => {
  let user: TestUser;
  let repo = "";
  const sbx = (args: string[]) => user.run(["bun", CLI, ...args], { cwd: repo });
  beforeAll(() => {
    user = createTestUser();
    repo = ownRepo(user, "cnf");
    const c = sbx(["create", "cnf"]);
    if (c.code !== 0) throw new Error(`sbx create cnf exited ${c.code}: ${c.stderr}`);
  }, 180_000);
  afterAll(async () => {
    if (!user) return;
    await removeOwnWorld(user, repo, () => {
      sbx(["rm", "--force", "cnf"]);
    });
  }, 60_000);

  test("in a terminal session: sbx's line, exit 127", () => {
    // script(1) gives sbx a terminal: the daemon's PTY and `docker exec --tty`.
    const line = `${user.prefix().map((a) => `'${a}'`).join(" ")} bun ${CLI} shell cnf -- nosuchcmd --flag`;
    const r = Bun.spawnSync(["script", "-qec", line, "/dev/null"], { cwd: repo, stdout: "pipe", stderr: "pipe" });
    expect({ code: r.exitCode, screen: screenLines(r.stdout) }).toEqual({ code: 127, screen: ["sbx: nosuchcmd: command not found in sandbox cnf"] });
  }, 60_000);

  test("without a terminal (exec and shell): sbx's line on stderr, exit 127", () => {
    for (const verb of ["exec", "shell"]) {
      const r = sbx([verb, "cnf", "--", "nosuchcmd"]);
      expect({ verb, code: r.code, err: r.stderr, out: r.stdout }).toEqual({ verb, code: 127, err: "sbx: nosuchcmd: command not found in sandbox cnf\n", out: "" });
    }
  }, 60_000);

  test("a command that is there still runs, in a terminal too, with its own exit code", () => {
    const line = `${user.prefix().map((a) => `'${a}'`).join(" ")} bun ${CLI} shell cnf -- sh -c 'echo here; exit 3'`;
    const r = Bun.spawnSync(["script", "-qec", line, "/dev/null"], { cwd: repo, stdout: "pipe", stderr: "pipe" });
    expect({ code: r.exitCode, screen: screenLines(r.stdout) }).toEqual({ code: 3, screen: ["here"] });
  }, 60_000);
});
