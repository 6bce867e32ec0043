// same-identity with any image: a Dockerfile that never creates the host user (a plain `FROM`), or whose image gives
// the host's uid to a user of its own, still gives the sandbox the host's name, home and group, for the tools that
// read passwd (whoami, id, getent, Python's pwd, ssh). Run as a real second uid (the fixture's test user), not root.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { acquireFixture, BASE_IMAGE, canRun, releaseFixture, skipReason, type Fixture } from "./fixture";

describe.skipIf(!canRun)(`an image that lacks the host user (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  let good = "";
  beforeAll(() => {
    f = acquireFixture();
    good = readFileSync(join(f.repo, "Dockerfile"), "utf8");
  }, 60_000);
  afterAll(() => {
    writeFileSync(join(f.repo, "Dockerfile"), good);
    for (const n of ["plainfrom", "uidtaken"]) f?.sbx(["rm", "--force", n]);
    releaseFixture();
  }, 60_000);

  const probe = 'id -un; id -u; id -gn; id -g; whoami; getent passwd "$(id -u)" | cut -d: -f1,6; python3 -c "import os, pwd; print(pwd.getpwuid(os.getuid()).pw_dir)"; echo "$HOME"';

  function identityOf(name: string, dockerfile: string): string[] {
    writeFileSync(join(f.repo, "Dockerfile"), dockerfile);
    const c = f.sbx(["create", name]);
    expect({ code: c.code, err: c.code === 0 ? "" : c.stderr }).toEqual({ code: 0, err: "" });
    const r = f.sbx(["exec", name, "--", "sh", "-c", probe]);
    expect({ code: r.code, err: r.stderr }).toEqual({ code: 0, err: "" });
    return r.stdout.trim().split("\n");
  }

  test("a plain FROM of an image with root only: the host's name, uid, group and home inside", () => {
    expect(f.user.uid).not.toBe(0);
    const got = identityOf("plainfrom", `FROM ${BASE_IMAGE}\n`);
    const u = f.user;
    expect(got).toEqual([u.name, String(u.uid), u.name, String(u.gid), u.name, `${u.name}:${u.home}`, u.home, u.home]);
  }, 180_000);

  test("an image whose own user holds the host's uid: that user becomes the host's (name and home), its files stay its own", () => {
    const u = f.user;
    const got = identityOf("uidtaken", `FROM ${BASE_IMAGE}\nRUN useradd -u ${u.uid} -m -d /home/imageuser imageuser && touch /home/imageuser/mine && chown imageuser /home/imageuser/mine\n`);
    expect(got.slice(0, 2)).toEqual([u.name, String(u.uid)]);
    expect(got[4]).toBe(u.name);
    expect(got[5]).toBe(`${u.name}:${u.home}`);
    const own = f.sbx(["exec", "uidtaken", "--", "stat", "-c", "%u %U", "/home/imageuser/mine"]);
    expect(own.stdout.trim()).toBe(`${u.uid} ${u.name}`);
  }, 180_000);
});
