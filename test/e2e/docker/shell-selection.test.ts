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

  test("--shell picks this session's shell, before or after the name; the next session gets the sandbox's own again", () => {
    for (const argv of [["shell", "--shell", "bash", "fishy"], ["shell", "fishy", "--shell", "bash"]]) {
      const r = f.sbx(argv, { stdin: 'echo "bash=$BASH_VERSION"\n', env: { SHELL: "/usr/bin/fish" } });
      expect({ argv, code: r.code, out: r.stdout }).toEqual({ argv, code: 0, out: expect.stringMatching(/^bash=\d/m) });
    }
    const again = f.sbx(["shell", "fishy"], { stdin: "echo shell=(status fish-path)\n", env: { SHELL: "/usr/bin/fish" } });
    expect(again.stdout).toMatch(/^shell=\/usr\/bin\/fish/m);
    const none = f.sbx(["shell", "--shell", "tcsh", "fishy"], { stdin: "", env: { SHELL: "/usr/bin/fish" } });
    expect({ code: none.code, err: none.stderr }).toEqual({ code: 127, err: "sbx: tcsh: command not found in sandbox fishy\n" });
  }, 60_000);

  test("a shell the image lacks falls back to bash", () => {
    const r = f.sbx(["shell", "noshell"], { stdin: 'echo "bash=$BASH_VERSION"\n' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^bash=\d/m);
  }, 60_000);
});
