// `sbx shell NAME -- cmd` without a terminal goes daemon → the sandbox's exec agent (no engine exec, no docker CLI): stdin in, stdout and stderr apart, exit code, large output lossless, the same environment as docker exec, a stopped sandbox started first.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { acquireFixture, CLI, canRun, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

describe.skipIf(!canRun)(`attach fast path (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  beforeAll(() => {
    f = acquireFixture();
    mustCreate(f, "fast");
  }, 90_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "fast"]);
    releaseFixture();
  }, 60_000);

  test("stdin reaches the command, stdout and stderr stay apart, the exit code is sbx's", () => {
    const r = f.sbx(["shell", "fast", "--", "sh", "-c", "cat; echo to-stderr >&2; exit 5"], { stdin: "piped in\n" });
    expect(r.code).toBe(5);
    expect(r.stdout).toBe("piped in\n");
    expect(r.stderr).toBe("to-stderr\n");
  }, 60_000);

  test("runs in the caller's dir (mapped into the clone), as the caller, with the sandbox's PATH", () => {
    const r = f.sbx(["shell", "fast", "--", "sh", "-c", 'echo "$(pwd) $(id -u) ${PATH%%:*}"'], { cwd: `${f.repo}/sub` });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(`${f.repo}/sub ${f.user.uid} /opt/sbx/shims`);
  }, 60_000);

  test("4 MB of output arrives whole", () => {
    const r = f.sbx(["shell", "fast", "--", "sh", "-c", "head -c 4194304 /dev/zero | tr '\\0' x"]);
    expect(r.code).toBe(0);
    expect(r.stdout.length).toBe(4194304);
  }, 60_000);

  test("4 MB into a reader that starts a second late (the pipe fills) still arrives whole: sbx exits only once it is written", () => {
    const cmd = `bun ${CLI} shell fast -- sh -c "head -c 4194304 /dev/zero | tr '\\0' x" | (sleep 1; wc -c)`;
    const r = f.user.run(["sh", "-c", cmd], { cwd: f.repo });
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("4194304");
  }, 60_000);

  test("it runs through the sandbox's exec agent (audited as such), with exactly the environment `docker exec` gives (and a pipe's NO_COLOR)", () => {
    // Output to a pipe: sbx says so inside (NO_COLOR=1, TERM=dumb; src/core/terminal-vars.ts), so docker exec is given the same.
    const via = f.sbx(["shell", "fast", "--", "env"], { env: { TERM: "dumb" } });
    expect(via.code).toBe(0);
    const ctr = f.docker(["ps", "--quiet", "--filter", "label=sbx.name=fast", "--filter", `label=sbx.repo=${f.repo}`]).stdout.trim();
    const direct = f.docker(["exec", "--user", `${f.user.uid}:${f.user.gid}`, "--env", "TERM=dumb", "--env", "NO_COLOR=1", ctr, "env"]);
    expect(direct.code).toBe(0);
    const sorted = (t: string) => t.trim().split("\n").sort();
    expect(sorted(via.stdout)).toEqual(sorted(direct.stdout));
    const logs = f.sbx(["logs", "--sandbox", "fast", "--json", "-n", "20"]).stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(logs.some((e: { action: string; detail: { argv0?: string; via?: string } }) => e.action === "exec" && e.detail.argv0 === "env" && e.detail.via === "agent")).toBe(true);
  }, 60_000);

  test("a stopped sandbox is started (guards first) before the command runs", () => {
    expect(f.sbx(["stop", "fast"]).code).toBe(0);
    const r = f.sbx(["shell", "fast", "--", "echo", "back"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("back\n");
  }, 90_000);
});
