// package-mirrors, what a session gets: the host's mirror settings as variables and npm's global config lines, with a
// bound registry token's placeholder line beside them in the same file, never the host's credential; a variable the
// sandbox sets itself (its config file's env, devcontainer.json) stays its own. Real files: a temp home read by the
// host side, the session's files written into a temp socket dir.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Mirrors } from "../../../src/core/mirrors";
import type { SandboxSpec } from "../../../src/core/spec";
import { sandboxEnv } from "../../../src/drivers/env";
import { NPMRC_FILE, secretSessionEnv } from "../../../src/sandboxes/secret-env";
import { CopyIn } from "../../../src/secrets/copy-in";
import { readHostMirrors, scanMirrors } from "../../../src/secrets/host-mirrors";

let root = "";
const NPM_TOKEN = "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
const PASSWORD = "Pw-7c1e9a0b55d2";

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "sbx-mirror-env-"));
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

function specAt(name: string, user: Record<string, string> = {}): SandboxSpec {
  const dir = join(root, name, "sock");
  mkdirSync(dir, { recursive: true });
  return {
    id: name,
    name,
    repo: "/src/app",
    dir: join(root, name, "sb"),
    hostUser: { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" },
    sockets: { dir, proxy: join(dir, "proxy.sock"), bridge: join(dir, "bridge.sock") },
    env: sandboxEnv(name, { proxyPort: 3128, bridgeSocket: "/run/sbx/bridge.sock" }, { user }),
    overlays: [],
    options: { driver: "docker", claudeAuth: "overlay" },
  };
}

const noSecrets = { env: {}, caPem: null, extraCas: "", npmrc: [], notes: [] };

/** A host whose settings hold credentials beside their mirrors, read and scanned as `sbx create` does. */
function hostMirrors(): Mirrors {
  const home = join(root, "home");
  mkdirSync(join(home, ".config", "pip"), { recursive: true });
  writeFileSync(join(home, ".npmrc"), `registry=https://npm.corp.example/\n//npm.corp.example/:_authToken=${NPM_TOKEN}\n`);
  writeFileSync(join(home, ".config", "pip", "pip.conf"), `[global]\nindex-url = https://ann:${PASSWORD}@pypi.corp.example/simple\n`);
  const plan = readHostMirrors({ env: { GOPROXY: "https://goproxy.corp.example,direct" }, home, platform: "linux", uid: process.getuid!(), outside: [] });
  return scanMirrors(plan, new CopyIn({ NPM_TOKEN }, { home }));
}

describe("package-mirrors: a session's variables and files", () => {
  test("no-secret-inside: the host's npm token and pip password are in neither the session's variables nor any file sbx writes for it; its registries are", () => {
    const spec = specAt("a");
    const env = secretSessionEnv(spec, noSecrets, hostMirrors());
    expect(env).toEqual({
      PIP_INDEX_URL: "https://pypi.corp.example/simple",
      GOPROXY: "https://goproxy.corp.example,direct",
      NPM_CONFIG_GLOBALCONFIG: `/run/sbx/${NPMRC_FILE}`,
    });
    const files = readdirSync(spec.sockets.dir).map((f) => readFileSync(join(spec.sockets.dir, f), "utf8"));
    expect(files).toEqual(["registry=https://npm.corp.example/\n"]);
    for (const text of [JSON.stringify(env), ...files]) {
      expect(text).not.toContain(NPM_TOKEN);
      expect(text).not.toContain(PASSWORD);
    }
  });

  test("a bound registry token's placeholder line sits beside the mirror's registry in npm's one global config", () => {
    const spec = specAt("b");
    const m: Mirrors = { settings: [{ tool: "npm", key: "registry", value: "https://npm.corp.example/", from: "~/.npmrc", via: "npmrc", hosts: ["npm.corp.example"], replaces: true }] };
    const env = secretSessionEnv(spec, { ...noSecrets, caPem: null, npmrc: [{ host: "npm.corp.example", placeholder: "npm_PlAcEhOlDeR0123456789abcdefghijklmn" }] }, m);
    expect(env.NPM_CONFIG_GLOBALCONFIG).toBe(`/run/sbx/${NPMRC_FILE}`);
    expect(readFileSync(join(spec.sockets.dir, NPMRC_FILE), "utf8")).toBe("registry=https://npm.corp.example/\n//npm.corp.example/:_authToken=npm_PlAcEhOlDeR0123456789abcdefghijklmn\n");
  });

  test("a variable the sandbox sets itself (its config's env) stays its own; the mirror's is not laid over it", () => {
    const spec = specAt("c", { GOPROXY: "https://mine.example" });
    const m: Mirrors = { settings: [{ tool: "go", key: "GOPROXY", value: "https://goproxy.corp.example", from: "$GOPROXY", via: "env", hosts: ["goproxy.corp.example"], replaces: true }] };
    expect(secretSessionEnv(spec, noSecrets, m)).toEqual({});
  });

  test("no mirrors and no secrets: nothing, and no file", () => {
    const spec = specAt("d");
    expect(secretSessionEnv(spec, noSecrets, null)).toEqual({});
    expect(readdirSync(spec.sockets.dir)).toEqual([]);
  });
});
