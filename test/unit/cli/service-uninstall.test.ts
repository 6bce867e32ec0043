// sbx service uninstall on macOS keeps the root kit while macOS sandboxes exist: removing them needs the helper.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { refuseWhileMacosSandboxes } from "../../../src/cli/commands/service";
import { SbxError } from "../../../src/core/errors";
import { Store } from "../../../src/store/store";

const tmp = mkdtempSync(join(tmpdir(), "sbx-svc-rm-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("sbx service uninstall (macOS)", () => {
  test("no state yet: nothing to keep, and no database is made", async () => {
    const dbFile = join(tmp, "none", "sbx.db");
    await refuseWhileMacosSandboxes({ paths: { dbFile } });
    expect(existsSync(dbFile)).toBe(false);
  });

  test("refused while a macOS sandbox exists, naming it and what to run; Docker sandboxes do not count", async () => {
    const dbFile = join(tmp, "sbx.db");
    const s = new Store(dbFile);
    s.createSandbox({ name: "web", repo: "/r", backend: "docker" });
    s.close();
    await refuseWhileMacosSandboxes({ paths: { dbFile } });
    const s2 = new Store(dbFile);
    s2.createSandbox({ name: "agent", repo: "/r", backend: "macos" });
    s2.close();
    const err = (await refuseWhileMacosSandboxes({ paths: { dbFile } }).catch((e) => e)) as SbxError;
    expect(err).toBeInstanceOf(SbxError);
    expect(err.code).toBe("conflict");
    expect(err.message).toContain("agent");
    expect(err.hint).toContain("sbx rm agent");
  });
});
