// service-flags: what `--service NAME=IMAGE` may name. Both halves land on docker's command line and in container
// and volume names, so each is held to a shape that cannot be a flag, a path or more than one word.
import { describe, expect, test } from "bun:test";
import { MAX_SERVICES, parseServiceFlag, parseServiceFlags, servicesRefused, ServiceSpecSchema } from "../../../src/core/services";

describe("service-flags: a service is a name and a local image reference, nothing else", () => {
  test("plain forms are taken", () => {
    expect(parseServiceFlag("db=postgres-test:16")).toEqual({ name: "db", image: "postgres-test:16" });
    expect(parseServiceFlag("cache=sbx/redis")).toEqual({ name: "cache", image: "sbx/redis" });
    expect(parseServiceFlag(`db=pg@sha256:${"a".repeat(64)}`).image).toBe(`pg@sha256:${"a".repeat(64)}`);
  });

  test("an image that would be a docker flag, a second word or a shell fragment is refused", () => {
    for (const image of ["--privileged", "-v/:/host", "pg --network=host", "pg;id", "pg$(id)", "pg\nx", "", "PG:1", "pg:", "pg:-x"]) {
      expect(() => parseServiceFlag(`db=${image}`)).toThrow(/not a local image reference|Dockerfile/);
    }
  });

  test("a name that is not one word of [a-z0-9-] (a path, a flag, upper case, too long) is refused", () => {
    for (const name of ["../x", "a/b", "-x", "Db", "1db", "d b", "x".repeat(31), ""]) {
      expect(() => parseServiceFlag(`${name}=pg:1`)).toThrow(/service name|NAME=IMAGE/);
    }
  });

  test("a Dockerfile path is refused with how to build it (not yet supported), never read", () => {
    for (const image of ["./docker/redis.Dockerfile", "/etc/passwd", "../x", "Dockerfile", "sub/Dockerfile"]) {
      expect(() => parseServiceFlag(`r=${image}`)).toThrow(/Dockerfile|not a local image/);
    }
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
  });

  test("a user-account kind refuses services, naming the backend that has them", () => {
    expect(servicesRefused("linux-user").message).toMatch(/Docker sandboxes, not --backend linux-user/);
  });
});
