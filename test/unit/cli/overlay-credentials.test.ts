// Invariant "overlays carry no credentials": an overlay that is, or holds, a credential location is refused (flag or
// config file) with the reason, unless --expose-credentials, which names each location it shows.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
let home: string;
beforeEach(async () => {
  x = await dockerCliWorld();
  home = x.w.env.vars.HOME;
  mkdirSync(join(home, ".ssh"), { recursive: true });
  writeFileSync(join(home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n");
  mkdirSync(join(home, ".config", "gh"), { recursive: true });
  mkdirSync(join(home, ".config", "nvim"), { recursive: true });
});
afterEach(async () => {
  await x.close();
});

describe("overlays of credential locations", () => {
  test("--overlay ~/.ssh, a dir holding ~/.config/gh, and one inside it are refused (exit 77), and nothing is made", async () => {
    for (const o of ["~/.ssh", "~/.config", join(home, ".config", "gh")]) {
      const r = await x.cli(["create", "c", "--overlay", o]);
      expect({ o, code: r.code }).toEqual({ o, code: 77 });
      expect(r.stderr).toContain("will not overlay");
      expect(r.stderr).toContain("--expose-credentials");
    }
    expect(JSON.parse((await x.cli(["list", "--json"])).stdout)).toEqual([]);
  });

  test("the config file's overlays are held to the same rule", async () => {
    mkdirSync(join(x.w.root, "config", "sbx"), { recursive: true });
    writeFileSync(join(x.w.root, "config", "sbx", "config.json"), JSON.stringify({ overlays: ["~/.ssh"] }));
    const r = await x.cli(["create", "c"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("~/.ssh");
  });

  test("a dir without credentials is overlaid; --expose-credentials overlays one and says what the agent can read", async () => {
    expect((await x.cli(["create", "a", "--overlay", "~/.config/nvim"])).code).toBe(0);
    const r = await x.cli(["create", "b", "--overlay", "~/.ssh", "--expose-credentials"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("warning: --expose-credentials: the agent in this sandbox can read ~/.ssh");
  });
});
