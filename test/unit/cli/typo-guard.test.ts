// typo-guard: a command that creates its sandbox on first use (exec, run NAME, run AGENT NAME) does not silently make
// a sandbox whose name is one slip from an existing one's: asked at a terminal, refused without one (naming the near
// sandbox and --create), made with --create; a name far from every sandbox is still made at once. (A case-only slip,
// `Demo`, never gets this far: names are lowercase and the name check says so.)
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
beforeEach(async () => {
  x = await dockerCliWorld();
  expect((await x.cli(["create", "demo"])).code).toBe(0);
});
afterEach(async () => {
  await x.close();
});

const names = async () => (JSON.parse((await x.cli(["list", "--json"])).stdout) as { name: string }[]).map((s) => s.name).sort();

describe("typo-guard: create on first use", () => {
  test.each([
    [["exec", "demx", "--", "true"], "`sbx exec demo -- …`", "`sbx exec --create demx -- …`"],
    [["run", "dmeo", "--", "true"], "`sbx run demo -- …`", "`sbx run --create dmeo -- …`"],
    [["exec", "dem"], "`sbx exec demo -- …`", "`sbx exec --create dem -- …`"],
    [["run", "claude", "demoo"], "`sbx run claude demo`", "`sbx run claude --create demoo`"],
  ])("piped: %p is refused, naming the near sandbox and --create; nothing is made", async (argv, near, create) => {
    const r = await x.cli(argv);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("'demo' is one edit away");
    expect(r.stderr).toContain(near);
    expect(r.stderr).toContain(create);
    expect(await names()).toEqual(["demo"]);
  });

  test("at a terminal: asked, and a no makes nothing", async () => {
    const r = await x.cli(["exec", "demx", "--", "true"], undefined, { tty: true, answers: ["n"] });
    expect(r.stderr).toContain("no sandbox 'demx' in this repo, but 'demo' is one edit away. Create a new sandbox 'demx'? [y/N]");
    expect(r.code).toBe(64);
    expect(await names()).toEqual(["demo"]);
  });

  test("--create makes it; a name far from every sandbox is made without asking; the existing name is entered", async () => {
    await x.cli(["exec", "--create", "demx", "--", "true"]);
    expect(await names()).toEqual(["demo", "demx"]);
    const far = await x.cli(["exec", "work", "--", "true"]);
    expect(far.stderr).not.toContain("one edit away");
    expect(await names()).toEqual(["demo", "demx", "work"]);
    expect((await x.cli(["exec", "demo", "--", "true"])).stderr).not.toContain("one edit away");
  });
});
