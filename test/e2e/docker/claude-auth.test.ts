// --claude-auth (issue 6): in inject mode (the default when the host has a Claude login) the host's ~/.claude/.credentials.json is not readable inside; in overlay mode it is, and `sbx create` warns.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, chmodSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { acquireFixture, canRun, releaseFixture, skipReason, type Fixture } from "./fixture";
import type { RunResult } from "../../support/test-user";

const SECRET = `sk-ant-oat01-e2e-${Math.random().toString(36).slice(2, 10)}`;

describe.skipIf(!canRun)(`Claude credentials modes (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  let creds = "";
  let inject: RunResult;
  let overlay: RunResult;
  beforeAll(() => {
    f = acquireFixture();
    creds = join(f.user.home, ".claude", ".credentials.json");
    writeFileSync(creds, JSON.stringify({ claudeAiOauth: { accessToken: SECRET } }));
    chownSync(creds, f.user.uid, f.user.gid);
    chmodSync(creds, 0o600);
    inject = f.sbx(["create", "cinject"]);
    overlay = f.sbx(["create", "coverlay", "--claude-auth", "overlay"]);
    if (inject.code !== 0 || overlay.code !== 0) throw new Error(`sbx create failed: ${inject.stderr}${overlay.stderr}`);
  }, 120_000);
  afterAll(() => {
    for (const n of ["cinject", "coverlay"]) f?.sbx(["rm", "--force", n]);
    if (creds) rmSync(creds, { force: true });
    releaseFixture();
  }, 60_000);

  test("inject (default with a host login): the credentials file inside is empty and read-only; nothing under ~/.claude holds the token", () => {
    expect(inject.stderr).not.toMatch(/can read your Claude credentials/);
    const r = f.sbx(["shell", "cinject", "--", "sh", "-c", 'wc -c < ~/.claude/.credentials.json; if echo x > ~/.claude/.credentials.json; then echo wrote; else echo refused; fi; grep -r -l -s -F "$1" ~/.claude || echo none', "probe", SECRET]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("0\nrefused\nnone\n");
    expect(r.stdout + r.stderr).not.toContain(SECRET);
  }, 60_000);

  test("overlay: the host's credentials are readable inside, and create warned about it", () => {
    expect(overlay.stderr).toMatch(/warning: --claude-auth overlay: the agent in sandbox coverlay can read your Claude credentials/);
    const r2 = f.sbx(["shell", "coverlay", "--", "sh", "-c", "cat ~/.claude/.credentials.json"]);
    expect(r2.code).toBe(0);
    expect(r2.stdout).toContain(SECRET);
  }, 60_000);

  test("--claude-auth with another value is a usage error (exit 64)", () => {
    const r = f.sbx(["create", "cbad", "--claude-auth", "both"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/--claude-auth must be inject or overlay/);
  }, 30_000);
});
