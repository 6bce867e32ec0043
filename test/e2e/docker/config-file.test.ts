// The config file (~/.config/sbx/config.json): its env and overlays reach new sandboxes; a bad one refuses create and leaves nothing (fail-closed).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { acquireFixture, canRun, releaseFixture, skipReason, type Fixture } from "./fixture";

describe.skipIf(!canRun)(`config file (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  let configFile = "";
  const write = (v: string) => {
    writeFileSync(configFile, v);
    chownSync(configFile, f.user.uid, f.user.gid);
  };
  beforeAll(() => {
    f = acquireFixture();
    const dir = join(f.user.home, ".config", "sbx");
    mkdirSync(dir, { recursive: true });
    for (const d of [join(f.user.home, ".config"), dir]) chownSync(d, f.user.uid, f.user.gid);
    configFile = join(dir, "config.json");
    const notes = join(f.user.home, "notes");
    mkdirSync(notes, { recursive: true });
    writeFileSync(join(notes, "from-host.txt"), "host notes\n");
    for (const p of [notes, join(notes, "from-host.txt")]) chownSync(p, f.user.uid, f.user.gid);
  }, 60_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "cfg"]);
    rmSync(configFile, { force: true });
    rmSync(join(f.user.home, "notes"), { recursive: true, force: true });
    releaseFixture();
  }, 60_000);

  test("a bad config refuses create with exit 78, names the problem, and leaves no sandbox", () => {
    write(JSON.stringify({ env: { HTTPS_PROXY: "http://around-the-proxy" } }));
    const r = f.sbx(["create", "cfg"]);
    expect(r.code).toBe(78);
    expect(r.stderr).toContain("env.HTTPS_PROXY");
    expect(r.stderr).toContain("set by sbx itself");
    // Refused before anything was made: no sandbox dir (not even the per-repo one on a first create).
    const root = join(f.user.home, ".cache", "sandbox");
    const made = existsSync(root) ? readdirSync(root).flatMap((d) => (existsSync(join(root, d, "cfg")) ? [d] : [])) : [];
    expect(made).toEqual([]);
    expect(f.sbx(["list", "--json"]).stdout).not.toContain('"cfg"');
  }, 60_000);

  test("env entries reach the sandbox, sbx's own variables still win, and config overlays are copy-on-write", () => {
    write(JSON.stringify({ env: { EDITOR: "nano", TEAM: "core" }, overlays: ["~/notes"] }, null, 2));
    const c = f.sbx(["create", "cfg"]);
    expect(c.code).toBe(0);
    const r = f.sbx(["shell", "cfg", "--", "sh", "-c", 'echo "$EDITOR|$TEAM|$HTTPS_PROXY"; cat ~/notes/from-host.txt; echo inside > ~/notes/from-host.txt']);
    expect(r.code).toBe(0);
    const [vars, notes] = r.stdout.trim().split("\n");
    expect(vars).toBe("nano|core|http://127.0.0.1:3128");
    expect(notes).toBe("host notes");
    expect(readFileSync(join(f.user.home, "notes", "from-host.txt"), "utf8")).toBe("host notes\n");
  }, 120_000);
});
