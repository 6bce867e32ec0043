// sandbox-main built once into one file: made from the shims, made again only when they change, and it runs.
import { describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureMainBundle } from "../../../../src/drivers/docker/main-bundle";
import { MAIN_BUNDLE } from "../../../../src/drivers/docker/args";

const SHIMS = join(import.meta.dir, "../../../../shims");

describe("ensureMainBundle", () => {
  test("builds one file Bun runs without transpiling, and builds it again only when a shim changes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-main-bundle-"));
    try {
      const shims = join(dir, "shims");
      cpSync(SHIMS, shims, { recursive: true });
      const out = join(dir, "main");
      expect(await ensureMainBundle(shims, out)).toBe(out);
      const file = join(out, MAIN_BUNDLE);
      const first = readFileSync(file, "utf8");
      expect(first.startsWith("// @bun\n")).toBe(true);
      expect(first).toContain("sbx forwarder listening");
      const ino = statSync(file).ino;
      expect(await ensureMainBundle(shims, out)).toBe(out);
      expect(statSync(file).ino).toBe(ino);
      writeFileSync(join(shims, "relay.ts"), `${readFileSync(join(shims, "relay.ts"), "utf8")}\nexport const changed = "a shim changed";\n`);
      expect(await ensureMainBundle(shims, out)).toBe(out);
      expect(statSync(file).ino).not.toBe(ino);
      expect((statSync(file).mode & 0o022) === 0).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a build that fails leaves the container on the .ts (undefined)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-main-bundle-"));
    try {
      writeFileSync(join(dir, "sandbox-main.ts"), "import './missing-module';\n");
      expect(await ensureMainBundle(dir, join(dir, "main"))).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
