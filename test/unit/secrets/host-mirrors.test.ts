// package-mirrors, the host side: the settings files are read by the copy-in door's rules and every value carried is
// scanned by the door. Hostile first: a settings file (or a dir on its path) that is a link into a sandbox's tree, a
// path that is inside one, another account's file, a FIFO: none is read, each is said; a registry address that holds a
// host secret stays on the host, and the door says where (never the value). Real files in a temp home.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CopyIn, readSettingsFile } from "../../../src/secrets/copy-in";
import { readHostMirrors, scanMirrors, settingsPaths } from "../../../src/secrets/host-mirrors";

let root = "";
const uid = process.getuid!();
const CARGO = '[source.crates-io]\nreplace-with = "corp"\n[source.corp]\nregistry = "sparse+https://cargo.corp.example/index/"\n';

/** A home of its own, a sandbox root beside it, and what the test writes in them. */
function world(name: string): { home: string; sandboxes: string; read: (env?: Record<string, string>) => ReturnType<typeof readHostMirrors> } {
  const home = join(root, name, "home");
  const sandboxes = join(root, name, "cache", "sbx", "sandbox");
  mkdirSync(home, { recursive: true });
  mkdirSync(sandboxes, { recursive: true });
  return { home, sandboxes, read: (env = {}) => readHostMirrors({ env, home, platform: "linux", uid, outside: [sandboxes] }) };
}

function put(p: string, text: string): void {
  mkdirSync(join(p, ".."), { recursive: true });
  writeFileSync(p, text);
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "sbx-host-mirrors-"));
});

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe("package-mirrors: a settings file a sandbox could have written is never read", () => {
  test("~/.cargo/config.toml that is a link into a sandbox's tree: not read, said", () => {
    const w = world("link-file");
    const planted = join(w.sandboxes, "app-1234", "demo", "clone", "config.toml");
    put(planted, CARGO.replace("cargo.corp.example", "evil.example"));
    mkdirSync(join(w.home, ".cargo"));
    symlinkSync(planted, join(w.home, ".cargo", "config.toml"));
    const p = w.read();
    expect(p.settings).toEqual([]);
    expect(p.notes).toEqual([{ tool: "cargo", from: "~/.cargo/config.toml", key: "", why: "not read: it is reached through a link (sbx reads settings only from plain files on their own path)", hint: null }]);
  });

  test("~/.cargo itself a link to a sandbox's dir: the plain file under it is not read either", () => {
    const w = world("link-dir");
    const dir = join(w.sandboxes, "app-1234", "demo", "home", ".cargo");
    put(join(dir, "config.toml"), CARGO);
    symlinkSync(dir, join(w.home, ".cargo"));
    const p = w.read();
    expect(p.settings).toEqual([]);
    expect(p.notes.map((n) => n.why)).toEqual(["not read: it is reached through a link (sbx reads settings only from plain files on their own path)"]);
  });

  test("CARGO_HOME naming a dir in a sandbox's tree (no link at all): not read", () => {
    const w = world("in-tree");
    const cargoHome = join(w.sandboxes, "app-1234", "demo", "cargo");
    put(join(cargoHome, "config.toml"), CARGO);
    const p = w.read({ CARGO_HOME: cargoHome });
    expect(p.settings).toEqual([]);
    expect(p.notes.map((n) => n.why)).toEqual(["not read: it is in a sandbox's tree"]);
  });

  test.skipIf(uid !== 0)("a file another account owns (a guest's, say): not read", () => {
    const w = world("owner");
    put(join(w.home, ".npmrc"), "registry=https://npm.corp.example/\n");
    chownSync(join(w.home, ".npmrc"), 4242, 4242);
    const p = w.read();
    expect(p.settings).toEqual([]);
    expect(p.notes.map((n) => n.why)).toEqual(["not read: it belongs to another account (uid 4242)"]);
  });

  test("a FIFO where ~/.npmrc is: not read, and the read does not wait on it", () => {
    const w = world("fifo");
    const r = Bun.spawnSync(["mkfifo", join(w.home, ".npmrc")]);
    expect(r.exitCode).toBe(0);
    const p = w.read();
    expect(p.settings).toEqual([]);
    expect(p.notes.map((n) => n.why)).toEqual(["not read: not a regular file"]);
  });

  test("the home's own path may be a link (a home on another disk); what is below it may not", () => {
    const w = world("home-link");
    put(join(w.home, ".npmrc"), "registry=https://npm.corp.example/\n");
    const alias = join(root, "home-link", "alias");
    symlinkSync(w.home, alias);
    const r = readSettingsFile(join(alias, ".npmrc"), { root: alias, owners: [uid, 0], outside: [w.sandboxes] });
    expect(r).toEqual({ text: "registry=https://npm.corp.example/\n" });
  });
});

describe("package-mirrors: every value carried goes through the copy-in door", () => {
  test("a registry address that holds a host secret stays on the host; the door names the file and field, never the value", () => {
    const w = world("door");
    const SECRET = "corp-internal-3f9a7c2e1b";
    put(join(w.home, ".npmrc"), `registry=https://npm.corp.example/?session=${SECRET}\n@acme:registry=https://npm.acme.example/\n`);
    const door = new CopyIn({ CORP_SESSION: SECRET }, { home: w.home });
    const kept = scanMirrors(w.read(), door);
    expect(kept.settings.map((s) => s.key)).toEqual(["@acme:registry"]);
    expect(door.findings).toEqual([{ file: "~/.npmrc", field: "registry", what: expect.stringContaining("CORP_SESSION") }]);
    expect(JSON.stringify([kept, door.findings])).not.toContain(SECRET);
  });

  test("a secret's shape in an address the reader keeps (a query parameter not named like a key) is caught by the door", () => {
    const w = world("door-shape");
    const TOKEN = "ghp_0123456789abcdefABCDEF0123456789abcd";
    const p = w.read({ GOPROXY: `https://goproxy.corp.example/?v=${TOKEN}`, GOPRIVATE: "*.corp.example" });
    expect(p.settings.map((s) => s.key)).toEqual(["GOPROXY", "GOPRIVATE"]);
    const door = new CopyIn({}, { home: w.home });
    expect(scanMirrors(p, door).settings.map((s) => s.key)).toEqual(["GOPRIVATE"]);
    expect(door.findings).toEqual([{ file: "$GOPROXY", field: "GOPROXY", what: "GitHub token" }]);
  });
});

describe("package-mirrors: where each tool's settings are", () => {
  test("a real home: all four read, in each tool's place", () => {
    const w = world("all");
    put(join(w.home, ".npmrc"), "registry=https://npm.corp.example/\n");
    put(join(w.home, ".config", "pip", "pip.conf"), "[global]\nindex-url = https://pypi.corp.example/simple\n");
    put(join(w.home, ".config", "go", "env"), "GOPROXY=https://goproxy.corp.example\n");
    put(join(w.home, ".cargo", "config.toml"), CARGO);
    const p = w.read();
    expect(p.notes).toEqual([]);
    expect(p.settings.map((s) => `${s.tool} ${s.key} ${s.from}`)).toEqual([
      "npm registry ~/.npmrc",
      "pip PIP_INDEX_URL ~/.config/pip/pip.conf line 2",
      "go GOPROXY ~/.config/go/env line 1",
      "cargo source.corp.registry ~/.cargo/config.toml",
      "cargo source.crates-io.replace-with ~/.cargo/config.toml",
    ]);
  });

  test("PIP_CONFIG_FILE=/dev/null: pip reads no file, nor does sbx; GOENV=off likewise for Go", () => {
    const w = world("off");
    put(join(w.home, ".config", "pip", "pip.conf"), "[global]\nindex-url = https://pypi.corp.example/simple\n");
    put(join(w.home, ".config", "go", "env"), "GOPROXY=https://goproxy.corp.example\n");
    expect(w.read({ PIP_CONFIG_FILE: "/dev/null", GOENV: "off" }).settings).toEqual([]);
  });

  test("cargo's config is not TOML: said, nothing carried", () => {
    const w = world("bad-toml");
    put(join(w.home, ".cargo", "config.toml"), "[source.crates-io\nreplace-with = \n");
    expect(w.read().notes.map((n) => n.why)).toEqual(["not read: not valid TOML"]);
  });

  test("macOS keeps pip's and Go's user settings under Application Support; the variables relocate each file", () => {
    const mac = settingsPaths({ env: {}, home: "/Users/ann", platform: "darwin" });
    expect(mac.pip).toContain("/Users/ann/Library/Application Support/pip/pip.conf");
    expect(mac.go).toBe("/Users/ann/Library/Application Support/go/env");
    const moved = settingsPaths({ env: { NPM_CONFIG_USERCONFIG: "/etc/ann/npmrc", CARGO_HOME: "/opt/cargo", GOENV: "/etc/ann/goenv", PIP_CONFIG_FILE: "/etc/ann/pip.conf", XDG_CONFIG_HOME: "/home/ann/.xdg" }, home: "/home/ann", platform: "linux" });
    expect(moved).toEqual({
      npm: "/etc/ann/npmrc",
      pip: ["/etc/xdg/pip/pip.conf", "/etc/pip.conf", "/home/ann/.pip/pip.conf", "/home/ann/.xdg/pip/pip.conf", "/etc/ann/pip.conf"],
      go: "/etc/ann/goenv",
      cargo: ["/opt/cargo/config", "/opt/cargo/config.toml"],
    });
  });
});
