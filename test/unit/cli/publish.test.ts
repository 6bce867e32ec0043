// sbx publish through the daemon's routes (served in this process), Docker on the in-memory engine: a removal that
// names nothing the sandbox reaches is said (exit 66) and changes nothing, never passed over as if it had removed it.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
beforeEach(async () => {
  x = await dockerCliWorld();
});
afterEach(async () => {
  await x.close();
});

describe("sbx publish", () => {
  test("adds and removes; --remove of a service it does not reach is refused (66) with what it reaches, nothing changed", async () => {
    expect((await x.cli(["create", "demo"])).code).toBe(0);
    expect((await x.cli(["publish", "demo", "5432", "127.0.0.2:8443"])).code).toBe(0);
    const r = await x.cli(["publish", "demo", "--remove", "6379"]);
    expect({ code: r.code, err: r.stderr }).toEqual({
      code: 66,
      err: "sbx: sbx publish --remove: sandbox demo does not reach 127.0.0.1:6379; nothing changed\nhint: `sbx publish demo` lists what it reaches.\n",
    });
    expect(JSON.parse((await x.cli(["publish", "demo", "--json"])).stdout).published).toEqual(["127.0.0.1:5432", "127.0.0.2:8443"]);
    expect((await x.cli(["publish", "demo", "--remove", "5432"])).code).toBe(0);
    expect(JSON.parse((await x.cli(["publish", "demo", "--json"])).stdout).published).toEqual(["127.0.0.2:8443"]);
  });
});
