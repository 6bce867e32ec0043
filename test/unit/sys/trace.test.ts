// SBX_TRACE: a command's stages as epoch-ms lines in the file it names (the process's start first); unset, nothing is
// written anywhere. In a child process: the variable is read once, when the module loads.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const tmp = mkdtempSync(join(tmpdir(), "sbx-trace-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const mod = join(import.meta.dir, "../../../src/sys/trace.ts");
const run = (env: Record<string, string>) =>
  Bun.spawnSync(["bun", "-e", `const { trace } = await import(${JSON.stringify(mod)}); trace("a b"); trace("c");`], { env: { PATH: process.env.PATH ?? "", ...env } });

describe("stage trace (SBX_TRACE)", () => {
  test("set: the process's start, then each mark in order, with its pid and a time that does not go back", () => {
    const file = join(tmp, "t.log");
    expect(run({ SBX_TRACE: file }).exitCode).toBe(0);
    const lines = readFileSync(file, "utf8").trim().split("\n").map((l) => l.split(" "));
    expect(lines.map((l) => l.slice(2).join(" "))).toEqual(["(process start)", "a b", "c"]);
    expect(new Set(lines.map((l) => l[1])).size).toBe(1);
    const at = lines.map((l) => Number(l[0]));
    expect(at[0]!).toBeGreaterThan(Date.now() - 60_000);
    expect(at[1]!).toBeGreaterThanOrEqual(at[0]!);
    expect(at[2]!).toBeGreaterThanOrEqual(at[1]!);
  });

  test("unset, or a file it cannot write: the command runs on, nothing made", () => {
    expect(run({}).exitCode).toBe(0);
    expect(run({ SBX_TRACE: join(tmp, "no/such/dir/t.log") }).exitCode).toBe(0);
    expect(existsSync(join(tmp, "no"))).toBe(false);
  });
});
