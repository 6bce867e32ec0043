// service-flags: what `--service NAME=IMAGE` may name. Both halves land on docker's command line and in container
// and volume names, so each is held to a shape that cannot be a flag, a path or more than one word.
import { describe, expect, test } from "bun:test";
import { combineServices, MAX_SERVICES, parseServiceEnvFlags, parseServiceFlag, parseServiceFlags, serviceEnvRefusal, servicesRefused, ServiceSpecSchema, startLevels } from "../../../src/core/services";

describe("service-flags: a service is a name and a local image reference, nothing else", () => {
  test("plain forms are taken", () => {
    expect(parseServiceFlag("db=postgres-test:16")).toEqual({ name: "db", image: "postgres-test:16" });
    expect(parseServiceFlag("cache=sbx/redis")).toEqual({ name: "cache", image: "sbx/redis" });
    expect(parseServiceFlag(`db=pg@sha256:${"a".repeat(64)}`).image).toBe(`pg@sha256:${"a".repeat(64)}`);
  });

  test("an image that would be a docker flag, a second word or a shell fragment is refused", () => {
    for (const image of ["--privileged", "-v/:/host", "pg --network=host", "pg;id", "pg$(id)", "pg\nx", "", "PG:1", "pg:", "pg:-x"]) {
      expect(() => parseServiceFlag(`db=${image}`)).toThrow(/not a local image reference/);
    }
  });

  test("a name that is not one word of [a-z0-9-] (a path, a flag, upper case, too long) is refused", () => {
    for (const name of ["../x", "a/b", "-x", "Db", "1db", "d b", "x".repeat(31), ""]) {
      expect(() => parseServiceFlag(`${name}=pg:1`)).toThrow(/service name|NAME=IMAGE/);
    }
  });

  test("a Dockerfile path is a build, made absolute from where sbx runs (never read here: the daemon checks it is a file and builds from the repo's last commit)", () => {
    expect(parseServiceFlag("r=./docker/redis.Dockerfile", "/home/ann/app/sub")).toEqual({ name: "r", build: { dockerfile: "/home/ann/app/sub/docker/redis.Dockerfile" } });
    expect(parseServiceFlag("r=../Dockerfile.redis", "/home/ann/app/sub")).toEqual({ name: "r", build: { dockerfile: "/home/ann/app/Dockerfile.redis" } });
    expect(parseServiceFlag("r=docker/Dockerfile", "/a")).toEqual({ name: "r", build: { dockerfile: "/a/docker/Dockerfile" } });
    expect(parseServiceFlag("r=/abs/x.Dockerfile", "/a")).toEqual({ name: "r", build: { dockerfile: "/abs/x.Dockerfile" } });
    // An image reference is never mistaken for a path.
    expect(parseServiceFlag("r=team/redis:7", "/a")).toEqual({ name: "r", image: "team/redis:7" });
  });

  test("the same name twice, or more than the most a sandbox has, is refused", () => {
    expect(() => parseServiceFlags(["db=a:1", "db=b:1"])).toThrow(/twice/);
    expect(() => parseServiceFlags(Array.from({ length: MAX_SERVICES + 1 }, (_, i) => `s${i}=img:1`))).toThrow(/at most/);
    expect(parseServiceFlags(["db=a:1", "cache=b:1"]).map((s) => s.name)).toEqual(["db", "cache"]);
  });

  test("the daemon's schema holds the same shapes (a client other than the CLI gets no further)", () => {
    expect(ServiceSpecSchema.safeParse({ name: "db", image: "--privileged" }).success).toBe(false);
    expect(ServiceSpecSchema.safeParse({ name: "../db", image: "pg:1" }).success).toBe(false);
    expect(ServiceSpecSchema.safeParse({ name: "db", image: "pg:1", privileged: true }).success).toBe(false);
    expect(ServiceSpecSchema.safeParse({ name: "db", image: "pg:1" }).success).toBe(true);
    // What a client could try to slip through the wire: a flag as an env name, a relative build path, a healthcheck
    // duration that is a flag, a user that is one, a volume that is a host path, a prototype key.
    for (const bad of [
      { name: "db", image: "pg:1", env: { "--privileged": "x" } },
      { name: "db", image: "pg:1", env: JSON.parse('{"__proto__": "x"}') },
      { name: "db", build: { dockerfile: "docker/Dockerfile" } },
      { name: "db", build: { dockerfile: "/r/../etc/Dockerfile" } },
      { name: "db", image: "pg:1", healthcheck: { cmd: "true", interval: "--privileged" } },
      { name: "db", image: "pg:1", healthcheck: {} },
      { name: "db", image: "pg:1", user: "--privileged" },
      { name: "db", image: "pg:1", volumes: [{ key: "/etc", path: "/x" }] },
      { name: "db", image: "pg:1", volumes: [{ key: "v", path: "relative" }] },
      { name: "db", image: "pg:1", privileged: true },
      { name: "db", image: "pg:1", network: "host" },
      { name: "db" },
    ]) {
      expect({ bad, ok: ServiceSpecSchema.safeParse(bad).success }).toEqual({ bad, ok: false });
    }
  });

  test("--service-env: SERVICE:NAME=VALUE, a value that looks like a secret refused, nothing read from the environment", () => {
    expect(parseServiceEnvFlags(["db:POSTGRES_DB=app", "db:POSTGRES_PASSWORD=postgres", "cache:X=a=b"])).toEqual({ db: { POSTGRES_DB: "app", POSTGRES_PASSWORD: "postgres" }, cache: { X: "a=b" } });
    expect(() => parseServiceEnvFlags(["db=POSTGRES_DB=app"])).toThrow(/SERVICE:NAME=VALUE/);
    expect(() => parseServiceEnvFlags(["db:--x=1"])).toThrow(/not a valid variable name/);
    expect(() => parseServiceEnvFlags(["db:__proto__=1"])).toThrow(/not a valid variable name/);
    expect(() => parseServiceEnvFlags(["db:TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789"])).toThrow(/looks like a secret/);
    expect(() => parseServiceEnvFlags(["db:aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"])).toThrow(/looks like a secret/);
    expect(serviceEnvRefusal("PW", "hunter2-host-secret", ["hunter2-host-secret"])).toMatch(/one of your host secrets/);
  });

  test("services together: --service-env names a service there is, flags and compose never share a name, depends_on has no circle", () => {
    const db = { name: "db", image: "pg:1", env: { A: "1" } };
    expect(combineServices([db], [], { db: { B: "2" } })).toEqual([{ name: "db", image: "pg:1", env: { A: "1", B: "2" } }]);
    expect(db.env).toEqual({ A: "1" }); // the caller's spec is not changed
    expect(() => combineServices([db], [], { cache: { B: "2" } })).toThrow(/has no service cache/);
    expect(() => combineServices([db], [{ name: "db", image: "x" }], {})).toThrow(/compose file has a service of that name/);
    expect(() => combineServices([db], [], { db: { T: "ghp_abcdefghijklmnopqrstuvwxyz0123456789" } })).toThrow(/looks like a secret/);
    expect(() => combineServices([], [{ name: "a", image: "x", dependsOn: [{ name: "b", healthy: false }] }, { name: "b", image: "x", dependsOn: [{ name: "a", healthy: true }] }], {})).toThrow(/in a circle/);
    expect(() => combineServices([], [{ name: "a", image: "x", dependsOn: [{ name: "zz", healthy: false }] }], {})).toThrow(/not one of this sandbox's services/);
  });

  test("start order: level by level, a service after everything it depends on", () => {
    const s = (name: string, ...deps: string[]) => ({ name, dependsOn: deps.map((d) => ({ name: d, healthy: true })) });
    expect(startLevels([s("web", "api", "cache"), s("api", "db"), s("db"), s("cache")]).map((l) => l.map((x) => x.name))).toEqual([["db", "cache"], ["api"], ["web"]]);
  });

  test("a user-account kind refuses services, naming the backend that has them", () => {
    expect(servicesRefused("linux-user").message).toMatch(/Docker sandboxes, not --backend linux-user/);
  });
});
