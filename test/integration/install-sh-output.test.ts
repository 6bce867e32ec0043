// install.sh's own lines: bold at a terminal, plain text in a log or CI (not a terminal) and with NO_COLOR. Run for
// real, with `id` and `dpkg-query` stubbed on PATH so it stops at its first step (packages missing, not root: exit 69)
// and changes nothing on this machine.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const INSTALL = join(import.meta.dir, "..", "..", "install.sh");
const hasScript = Bun.spawnSync(["sh", "-c", "command -v script"]).exitCode === 0;
let bin = "";

/** install.sh with the stubs first on PATH; at a terminal (script(1)) or piped. */
function install(o: { tty: boolean; env?: Record<string, string> }): { code: number; out: string } {
  const env = { PATH: `${bin}:/usr/local/bin:/usr/bin:/bin`, HOME: bin, ...o.env };
  const argv = o.tty ? ["script", "-qec", `bash '${INSTALL}' --no-demo`, "/dev/null"] : ["bash", INSTALL, "--no-demo"];
  const r = Bun.spawnSync(argv, { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? -1, out: r.stdout.toString() + r.stderr.toString() };
}

beforeAll(() => {
  bin = mkdtempSync(join(tmpdir(), "sbx-install-out-"));
  // Not root, and no package installed: install.sh says what is missing and stops before doing anything.
  writeFileSync(join(bin, "id"), "#!/bin/sh\necho 1000\n");
  writeFileSync(join(bin, "dpkg-query"), "#!/bin/sh\nexit 1\n");
  for (const f of ["id", "dpkg-query"]) chmodSync(join(bin, f), 0o755);
});
afterAll(() => rmSync(bin, { recursive: true, force: true }));

describe("install.sh output", () => {
  test("not at a terminal: plain lines, no escape codes", () => {
    const r = install({ tty: false });
    expect(r.code).toBe(69);
    expect(r.out).toContain("install: missing packages: git");
    expect(r.out).not.toContain("\x1b");
  });

  test.skipIf(!hasScript)(`at a terminal: the prefix in bold; with NO_COLOR, plain${hasScript ? "" : " — skipped: script(1) is not installed"}`, () => {
    const bold = install({ tty: true });
    expect(bold.code).toBe(69);
    expect(bold.out).toContain("\x1b[1minstall:\x1b[0m missing packages: git");
    const plain = install({ tty: true, env: { NO_COLOR: "1" } });
    expect(plain.out).toContain("install: missing packages: git");
    expect(plain.out).not.toContain("\x1b");
  });
});
