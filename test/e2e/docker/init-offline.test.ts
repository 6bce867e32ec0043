// A newcomer on a machine with no registry (as this one): `sbx init`'s starter would pull, so it says which image
// builds offline; `sbx init --from` that image writes a Dockerfile whose build needs nothing from the network, and
// the sandbox runs as the user. Through the real CLI and engine, its own throwaway user and repo, removed after.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createTestUser, type TestUser } from "../../support/test-user";
import { BASE_IMAGE, CLI, canRun, removeOwnWorld, skipReason } from "./fixture";


describe.skipIf(!canRun)(`sbx init offline (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let user: TestUser;
  let repo = "";
  const sbx = (args: string[]) => user.run(["bun", CLI, ...args], { cwd: repo });
  const git = (args: string[]) => user.run(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", ...args], { cwd: repo });
  beforeAll(() => {
    user = createTestUser();
    repo = join(user.home, "off");
    mkdirSync(repo);
    chownSync(repo, user.uid, user.gid);
    for (const a of [["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "initial"]]) {
      const r = git(a);
      if (r.code !== 0) throw new Error(`git ${a.join(" ")}: ${r.stderr}`);
    }
  }, 60_000);
  afterAll(async () => {
    if (!user) return;
    await removeOwnWorld(user, repo, () => {
      sbx(["rm", "--force", "off"]);
    });
  }, 60_000);

  test("sbx init: the starter, and a note naming the offline image this machine has", () => {
    const r = sbx(["init"]);
    expect(r.code).toBe(0);
    expect(readFileSync(join(repo, "Dockerfile"), "utf8")).toContain("FROM debian:bookworm-slim");
    expect(r.stderr).toContain(`\`sbx init --force --from ${BASE_IMAGE}\` builds from the offline base image on this machine`);
  }, 60_000);

  test("--from an image that is not here is refused (78), the Dockerfile untouched", () => {
    const r = sbx(["init", "--force", "--from", "sbxt-not-here:1"]);
    expect({ code: r.code, err: r.stderr }).toEqual({ code: 78, err: expect.stringContaining("image sbxt-not-here:1 is not on this machine (sbx pulls nothing)") });
    expect(readFileSync(join(repo, "Dockerfile"), "utf8")).toContain("FROM debian:bookworm-slim");
  }, 60_000);

  test("--from the offline image: create builds it with no registry, and the sandbox runs as the user", () => {
    expect(sbx(["init", "--force", "--from", BASE_IMAGE]).code).toBe(0);
    expect(readFileSync(join(repo, "Dockerfile"), "utf8")).toContain(`\nFROM ${BASE_IMAGE}\n`);
    for (const a of [["add", "Dockerfile"], ["commit", "-qm", "sbx init"]]) expect(git(a).code).toBe(0);
    const c = sbx(["create", "off"]);
    expect({ code: c.code, err: c.code === 0 ? "" : c.stderr }).toEqual({ code: 0, err: "" });
    const r = sbx(["exec", "off", "--", "sh", "-c", "id -un; git --version >/dev/null && echo has-git"]);
    expect({ code: r.code, out: r.stdout }).toEqual({ code: 0, out: `${user.name}\nhas-git\n` });
  }, 180_000);
});
