// Paths follow XDG (absolute values only, empty means unset), and every socket path fits in sun_path.
import { describe, expect, test } from "bun:test";
import { readEnv } from "../../../src/sys/env";
import {
  MAX_SOCKET_PATH,
  pathsFor,
  repoSandboxDir,
  sandboxDir,
  sandboxSockets,
  sha256Hex,
} from "../../../src/sys/paths";
import { sandboxId } from "../../../src/drivers/identity";

const env = (vars: Record<string, string | undefined>) =>
  readEnv({ vars: { HOME: "/home/ada", ...vars }, uid: 1000, gid: 1000, platform: "linux" });

describe("paths", () => {
  test("defaults under HOME when XDG variables are unset", () => {
    const p = pathsFor(env({}));
    expect(p.stateDir).toBe("/home/ada/.local/state/sbx");
    expect(p.configDir).toBe("/home/ada/.config/sbx");
    expect(p.sandboxRoot).toBe("/home/ada/.cache/sandbox");
    expect(p.dbFile).toBe("/home/ada/.local/state/sbx/sbx.db");
  });

  test("XDG variables are used when set", () => {
    const p = pathsFor(env({ XDG_STATE_HOME: "/s", XDG_CONFIG_HOME: "/c", XDG_CACHE_HOME: "/k", XDG_RUNTIME_DIR: "/run/user/1000" }));
    expect(p.stateDir).toBe("/s/sbx");
    expect(p.configDir).toBe("/c/sbx");
    expect(p.sandboxRoot).toBe("/k/sandbox");
    expect(p.runtimeDir).toBe("/run/user/1000/sbx");
    expect(p.controlSocket).toBe("/run/user/1000/sbx/control.sock");
  });

  test("set-but-empty XDG_CACHE_HOME falls back to ~/.cache", () => {
    expect(pathsFor(env({ XDG_CACHE_HOME: "" })).sandboxRoot).toBe("/home/ada/.cache/sandbox");
  });

  test("relative XDG values are ignored, as the XDG spec requires", () => {
    expect(pathsFor(env({ XDG_STATE_HOME: "rel/state" })).stateDir).toBe("/home/ada/.local/state/sbx");
  });

  test("per-repo dir is <dir name>-<sha256 of the real path>", () => {
    const p = pathsFor(env({}));
    const d = repoSandboxDir(p, "/home/ada/src/my-repo");
    expect(d).toBe(`/home/ada/.cache/sandbox/my-repo-${sha256Hex("/home/ada/src/my-repo")}`);
    expect(d).toMatch(/my-repo-[0-9a-f]{64}$/);
    expect(sandboxDir(p, "/home/ada/src/my-repo", "demo")).toBe(`${d}/demo`);
  });

  test("two repos with the same dir name get different dirs", () => {
    const p = pathsFor(env({}));
    expect(repoSandboxDir(p, "/a/app")).not.toBe(repoSandboxDir(p, "/b/app"));
  });

  test("a long XDG_RUNTIME_DIR falls back to a short dir so sockets stay under 108 bytes", () => {
    const long = "/run/" + "x".repeat(90);
    const p = pathsFor(env({ XDG_RUNTIME_DIR: long }));
    expect(p.runtimeDir).toBe("/tmp/sbx-1000");
    const s = sandboxSockets(p, sandboxId(p.sandboxRoot, "/repo", "demo"));
    expect(Buffer.byteLength(s.bridge)).toBeLessThanOrEqual(MAX_SOCKET_PATH);
  });

  test("the longest socket path under a usable XDG_RUNTIME_DIR fits", () => {
    const rt = "/run/user/" + "1".repeat(60);
    const p = pathsFor(env({ XDG_RUNTIME_DIR: rt }));
    for (const s of Object.values(sandboxSockets(p, sandboxId(p.sandboxRoot, "/r", "n")))) {
      expect(Buffer.byteLength(s)).toBeLessThanOrEqual(MAX_SOCKET_PATH);
    }
  });

  test("sandbox ids are short, stable and distinct per state root, repo and name", () => {
    expect(sandboxId("/s", "/r", "a")).toHaveLength(12);
    expect(sandboxId("/s", "/r", "a")).toBe(sandboxId("/s", "/r", "a"));
    expect(sandboxId("/s", "/r", "a")).not.toBe(sandboxId("/s", "/r", "b"));
    expect(sandboxId("/s", "/r1", "a")).not.toBe(sandboxId("/s", "/r2", "a"));
    expect(sandboxId("/s1", "/r", "a")).not.toBe(sandboxId("/s2", "/r", "a"));
  });
});

describe("env", () => {
  test("missing HOME is a clear error", () => {
    expect(() => readEnv({ vars: {}, uid: 1, gid: 1, platform: "linux" })).toThrow(/HOME/);
  });

  test("user name comes from USER, then LOGNAME, then the OS", () => {
    expect(env({ USER: "u1", LOGNAME: "u2" }).userName).toBe("u1");
    expect(env({ LOGNAME: "u2" }).userName).toBe("u2");
    expect(readEnv({ vars: { HOME: "/h" }, uid: 5, gid: 5, platform: "linux", osUserName: () => "os" }).userName).toBe("os");
  });
});

describe("passwdName", () => {
  test("reads the login name of a uid from a passwd file", async () => {
    const { passwdName } = await import("../../../src/sys/env");
    const f = `${process.env.SBX_TEST_ROOT}/passwd`;
    await Bun.write(f, "root:x:0:0:root:/root:/bin/bash\nada:x:1000:1000::/home/ada:/usr/bin/fish\n");
    expect(passwdName(1000, f)).toBe("ada");
    expect(passwdName(4242, f)).toBeUndefined();
    expect(passwdName(1000, "/nonexistent")).toBeUndefined();
  });
});

describe("parseEnvVars", () => {
  test("empty means unset, PATH has a default, XDG values count only when absolute", async () => {
    const { parseEnvVars } = await import("../../../src/sys/env");
    const v = parseEnvVars({ HOME: "/h", USER: "", XDG_RUNTIME_DIR: "run", XDG_STATE_HOME: "/s", PATH: "" });
    expect(v.USER).toBeUndefined();
    expect(v.PATH).toBe("/usr/local/bin:/usr/bin:/bin");
    expect(v.XDG_RUNTIME_DIR).toBeUndefined();
    expect(v.XDG_STATE_HOME).toBe("/s");
    expect(() => parseEnvVars({ HOME: "" })).toThrow(/HOME/);
  });

  test("sha256Hex matches a known digest", async () => {
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });
});
