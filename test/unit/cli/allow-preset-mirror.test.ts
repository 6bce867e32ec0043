// package-mirrors, presets: `sbx allow --preset npm|pypi|go|crates` on a machine whose settings name a mirror allows the
// mirror's hosts in place of the public registry's (the preset's site and toolchain hosts stay) and says so; a settings
// file sbx does not read (a link) leaves the public preset, said. Through main() and the daemon's policy routes.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PRESETS } from "../../../src/core/presets";
import { Store } from "../../../src/store/store";
import { FakeExec } from "../../fakes/exec";
import { runCli } from "../../support/cli";
import { serveInprocDaemon, type InprocDaemon } from "../../support/inproc-daemon";

let root: string;
let repo: string;
let home: string;
let exec: FakeExec;
let vars: Record<string, string>;
let dbFile: string;
let daemon: InprocDaemon;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "sbx-allow-mirror-"));
  repo = join(root, "repo");
  mkdirSync(repo);
  repo = realpathSync(repo);
  home = join(root, "home");
  mkdirSync(home);
  vars = { HOME: home, XDG_STATE_HOME: join(root, "state"), XDG_CONFIG_HOME: join(root, "config"), XDG_CACHE_HOME: join(root, "cache"), XDG_RUNTIME_DIR: join(root, "run") };
  dbFile = join(root, "state", "sbx", "sbx.db");
  exec = new FakeExec().always((argv) => argv[0] === "git" && argv.includes("rev-parse"), { stdout: `${repo}\n` });
  const store = new Store(dbFile);
  store.createSandbox({ name: "demo", repo, backend: "fake" });
  store.close();
  daemon = serveInprocDaemon({ ...vars, PATH: process.env.PATH }, exec);
});
afterEach(async () => {
  await daemon.stop();
  rmSync(root, { recursive: true, force: true });
});

const cli = (argv: string[], extra: Record<string, string> = {}) => runCli(argv, { exec, vars: { ...vars, ...extra }, cwd: repo });
const allowed = (): string[] => {
  const s = new Store(dbFile);
  try {
    return s.listAllow(s.findSandbox(repo, "demo")!.id).map((e) => e.pattern);
  } finally {
    s.close();
  }
};

describe("package-mirrors: sbx allow --preset offers this machine's mirror", () => {
  test("npm: ~/.npmrc's registry in place of registry.npmjs.org, and said", async () => {
    writeFileSync(join(home, ".npmrc"), "registry=https://npm.corp.example/\n//npm.corp.example/:_authToken=npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n");
    const r = await cli(["allow", "--preset", "npm", "--sandbox", "demo"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("npm on this machine uses npm.corp.example (~/.npmrc): allowing it");
    expect(r.stderr).toContain("in place of the public registry (registry.npmjs.org, registry.yarnpkg.com); `sbx allow registry.npmjs.org registry.yarnpkg.com` allows that too");
    expect(allowed().sort()).toEqual(["npm.corp.example", "npmjs.com", "www.npmjs.com"]);
    expect(r.stderr + r.stdout).not.toContain("npm_AbCd");
  });

  test("go: GOPROXY from the CLI's environment; crates: cargo's source replacement", async () => {
    mkdirSync(join(home, ".cargo"));
    writeFileSync(join(home, ".cargo", "config.toml"), '[source.crates-io]\nreplace-with = "corp"\n[source.corp]\nregistry = "sparse+https://cargo.corp.example:8443/index/"\n');
    expect((await cli(["allow", "--preset", "go", "--sandbox", "demo"], { GOPROXY: "https://goproxy.corp.example,direct" })).code).toBe(0);
    expect((await cli(["allow", "--preset", "crates", "--sandbox", "demo"])).code).toBe(0);
    expect(allowed().sort()).toEqual(["cargo.corp.example:8443", "dl.google.com", "go.dev", "goproxy.corp.example", "static.rust-lang.org", "sum.golang.org"]);
  });

  test("a settings file that is a link is not read: the public preset, and the reason said", async () => {
    const elsewhere = join(root, "planted-npmrc");
    writeFileSync(elsewhere, "registry=https://evil.example/\n");
    symlinkSync(elsewhere, join(home, ".npmrc"));
    const r = await cli(["allow", "--preset", "npm", "--sandbox", "demo"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("note: ~/.npmrc: not read: it is reached through a link");
    expect(allowed().sort()).toEqual([...PRESETS.npm].sort());
  });

  test("no mirror, or a preset that is no registry's: as before", async () => {
    expect((await cli(["allow", "--preset", "pypi", "--sandbox", "demo"])).code).toBe(0);
    expect((await cli(["allow", "--preset", "github", "--sandbox", "demo"])).code).toBe(0);
    expect(allowed().sort()).toEqual([...PRESETS.pypi, ...PRESETS.github].sort());
  });
});
