// sbx doctor's lines keep one column for the details and the fixes, however long a check's name ("guest
// confinement"). Run for real on this machine (its checks are whatever this machine gives), output piped.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../support/cli";

describe("sbx doctor's columns", () => {
  test("every detail and every fix starts in the same column", async () => {
    const root = mkdtempSync(join(tmpdir(), "sbx-doctor-cols-"));
    try {
      const o = { vars: { HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), XDG_CONFIG_HOME: join(root, "config"), XDG_CACHE_HOME: join(root, "cache"), XDG_RUNTIME_DIR: join(root, "run") } };
      const names = (JSON.parse((await runCli(["doctor", "--json"], o)).stdout) as { checks: { name: string }[] }).checks.map((c) => c.name);
      expect(names.length).toBeGreaterThan(3);
      const col = 6 + Math.max(12, ...names.map((n) => n.length)) + 1;
      const lines = (await runCli(["doctor"], o)).stdout.split("\n").filter((l) => /^(ok|warn|FAIL) /.test(l) || /^\s+fix: /.test(l));
      const off = lines.filter((l) => l[col - 1] !== " " || l[col] === " " || l[col] === undefined);
      expect(off).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
