// An ignored flag is an error, never silence: flags that would change nothing where they are given are refused
// (exit 64) with what to do, before anything is made. Through the CLI and the daemon's routes (served in this process),
// Docker on the in-memory engine.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
beforeEach(async () => {
  x = await dockerCliWorld();
});
afterEach(async () => {
  await x.close();
});

describe("flags that would change nothing are refused", () => {
  test("create --image … --rebuild: nothing is built for a named image; nothing is made", async () => {
    const r = await x.cli(["create", "demo", "--image", "sbx-base:bookworm", "--rebuild"]);
    expect({ code: r.code, err: r.stderr }).toEqual({
      code: 64,
      err: expect.stringContaining("sbx: --rebuild builds the sandbox's image, and this one is image sbx-base:bookworm, used as it is\nhint: Drop --rebuild"),
    });
    expect(JSON.parse((await x.cli(["list", "--json"])).stdout)).toEqual([]);
    expect((await x.cli(["create", "demo", "--image", "sbx-base:bookworm"])).code).toBe(0);
  });

  test("logs --repo without --sandbox", async () => {
    const r = await x.cli(["logs", "--repo", "."]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("--repo says which repo's sandbox --sandbox names; without --sandbox it would change nothing");
  });

  test("shell --attach SESSION with --shell or --repo: the session's shell and sandbox are chosen already", async () => {
    for (const extra of [["--shell", "bash"], ["--repo", "."]]) {
      const r = await x.cli(["shell", "--attach", "demo-abc123", ...extra]);
      expect({ extra, code: r.code }).toEqual({ extra, code: 64 });
      expect(r.stderr).toContain(`sbx shell --attach joins a running session as it is: ${extra[0]} would change nothing`);
    }
  });
});
