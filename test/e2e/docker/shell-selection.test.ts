// Shell selection: fish when the host $SHELL is fish, else that shell when the image has it, else bash.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { acquireFixture, canRun, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

describe.skipIf(!canRun)(`shell selection (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  beforeAll(() => {
    f = acquireFixture();
    mustCreate(f, "fishy", { SHELL: "/usr/bin/fish" });
    mustCreate(f, "noshell", { SHELL: "/usr/bin/zsh" });
  }, 90_000);
  afterAll(() => {
    for (const n of ["fishy", "noshell"]) f?.sbx(["rm", "--force", n]);
    releaseFixture();
  }, 60_000);

  test("a fish user gets fish", () => {
    const r = f.sbx(["shell", "fishy"], { stdin: "echo shell=(status fish-path) v=$FISH_VERSION\n", env: { SHELL: "/usr/bin/fish" } });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^shell=\/usr\/bin\/fish v=\d/m);
  }, 60_000);

  test("a shell the image lacks falls back to bash", () => {
    const r = f.sbx(["shell", "noshell"], { stdin: 'echo "bash=$BASH_VERSION"\n' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^bash=\d/m);
  }, 60_000);
});
