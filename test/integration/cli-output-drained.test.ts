// Every byte sbx prints reaches a slow reader before sbx exits, whatever its size and however it exits: output piped
// into a program that reads late was cut at the pipe's size (64 KiB through a shell pipe) when sbx exited at once.
// (Bun writes stderr synchronously, measured with 2 MB: only stdout could be cut.)
import { describe, expect, test } from "bun:test";
import { join } from "node:path";

const CLI = join(import.meta.dir, "../support/big-output-cli.ts");

/** Runs the CLI with stdout and stderr into pipes nobody reads for `delayMs`, then reads both whole. */
async function slowRead(args: string[], delayMs: number): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn([process.execPath, CLI, ...args], { stdout: "pipe", stderr: "pipe", stdin: "ignore", env: { ...process.env, NO_COLOR: "1" } });
  await Bun.sleep(delayMs);
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

describe("output is drained before exit", () => {
  test("--json of 20,000 rows (≈1.9 MB) into a pipe read late parses whole", async () => {
    const r = await slowRead(["big", "20000"], 500);
    expect(r.code).toBe(0);
    expect(r.out.length).toBeGreaterThan(1_000_000);
    const rows = JSON.parse(r.out) as { name: string }[];
    expect(rows).toHaveLength(20000);
    expect(rows[19999]!.name).toBe("sandbox-19999");
  }, 30_000);

  test("a verb that fails after printing: all it printed and its error reach the reader, with the error's exit code", async () => {
    const r = await slowRead(["big-fail", "20000"], 500);
    expect(r.code).toBe(69);
    expect(JSON.parse(r.out)).toHaveLength(20000);
    expect(r.err).toContain("failed after a lot of output");
  }, 30_000);
});
