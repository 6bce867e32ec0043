// same-identity: user name, uid, gid, $HOME and pwd inside equal the host's; files written inside belong to the host user.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { acquireFixture, canRun, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

describe.skipIf(!canRun)(`same-identity (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  beforeAll(() => {
    f = acquireFixture();
    mustCreate(f, "ident");
  }, 60_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "ident"]);
    releaseFixture();
  }, 60_000);

  test("name, uid, gid, $HOME and pwd inside equal the host's", () => {
    const cwd = join(f.repo, "sub", "deeper");
    const r = f.sbx(["shell", "ident", "--", "sh", "-c", 'id -un; id -u; id -g; echo "$HOME"; pwd; echo "$SANDBOX"'], { cwd });
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split("\n")).toEqual([f.user.name, String(f.user.uid), String(f.user.gid), f.user.home, cwd, "ident"]);
  }, 60_000);

  test("a file written inside is owned by the host user on the host", () => {
    const r = f.sbx(["shell", "ident", "--", "sh", "-c", "echo made-inside > inside.txt && mkdir -p newdir/x"]);
    expect(r.code).toBe(0);
    const dir = join(f.sandboxDir("ident"), "clone");
    for (const p of ["inside.txt", "newdir", "newdir/x"]) {
      const st = statSync(join(dir, p));
      expect([st.uid, st.gid]).toEqual([f.user.uid, f.user.gid]);
    }
  }, 60_000);

  test("parents of mount points under $HOME are the user's, not root's", () => {
    const r = f.sbx(["shell", "ident", "--", "stat", "-c", "%u:%g %n", f.user.home, join(f.user.home, "src"), join(f.user.home, ".config")]);
    expect(r.code).toBe(0);
    for (const line of r.stdout.trim().split("\n")) expect(line.startsWith(`${f.user.uid}:${f.user.gid} `)).toBe(true);
  }, 60_000);

  test("git works inside the clone: status, commit, log through the alternates; the host's branches are there as host/*", () => {
    const script = [
      "set -e",
      "git status --short",
      "git log --oneline | wc -l",
      "echo change >> README",
      "git -c user.email=a@example.invalid -c user.name=a commit -qam inside-commit",
      "git log --format=%s -2",
      "git rev-parse host/main >/dev/null && echo tracked",
    ].join("\n");
    const r = f.sbx(["shell", "ident", "--", "sh", "-c", script]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = r.stdout.trim().split("\n");
    expect(out).toContain("inside-commit");
    expect(out).toContain("initial");
    expect(out.at(-1)).toBe("tracked");
  }, 60_000);

  test("of the host repo's .git only its objects are inside, read-only", () => {
    const link = join(f.sandboxDir("ident"), "repo", ".git");
    const r = f.sbx(["shell", "ident", "--", "sh", "-c", `ls -A ${link}; touch ${link}/objects/planted 2>/dev/null && echo wrote || echo refused`]);
    expect(r.stdout.trim().split("\n")).toEqual(["objects", "refused"]);
  }, 60_000);
});
