// Hours-long agent work: a command that prints nothing for 75 s (an agent thinking, a build, a test suite) is not cut
// off, whichever way its output leaves sbx: piped to a file, or through a pipe to another program.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { acquireFixture, CLI, canRun, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

const QUIET_S = 75;

describe.skipIf(!canRun)(`long quiet commands (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  beforeAll(() => {
    f = acquireFixture();
    mustCreate(f, "quiet");
  }, 90_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "quiet"]);
    releaseFixture();
  }, 60_000);

  test(`sbx run NAME -- sh -c 'sleep ${QUIET_S}; echo done' > file, and | cat, both end with done and exit 0`, async () => {
    const out = join(f.user.home, "quiet.out");
    rmSync(out, { force: true });
    const cmd = `sleep ${QUIET_S}; echo done`;
    // Both at once: one through the exec agent to a file, one through a pipe into cat.
    const toFile = f.user.spawn(["sh", "-c", `bun ${CLI} run quiet -- sh -c '${cmd}' > ${out}`], { cwd: f.repo });
    const toPipe = f.user.spawn(["sh", "-c", `bun ${CLI} shell quiet -- sh -c 'echo start; ${cmd}; exit 3' | cat`], { cwd: f.repo });
    const [fileCode, pipeCode, pipeOut, fileErr, pipeErr] = await Promise.all([
      toFile.exited,
      toPipe.exited,
      new Response(toPipe.stdout).text(),
      new Response(toFile.stderr).text(),
      new Response(toPipe.stderr).text(),
    ]);
    expect({ code: fileCode, err: fileErr }).toEqual({ code: 0, err: "" });
    expect(readFileSync(out, "utf8")).toBe("done\n");
    // A pipeline's status is cat's; the text says the command ran to its end.
    expect({ code: pipeCode, out: pipeOut, err: pipeErr }).toEqual({ code: 0, out: "start\ndone\n", err: "" });
  }, (QUIET_S + 60) * 1000);
});
