// package-mirrors, end to end through the real daemon (a subprocess: the test entry's file-backed fake kind, whose
// sessions run on this machine with the variables a session gets) and the real CLI: a person whose npm, pip and Go
// settings name company mirrors, with an npm token and a pip password beside them, creates a sandbox; the create says what was
// carried, what stayed on the host with the exact command that binds it, and which hosts are not allowed yet; a session
// of the sandbox has the mirrors' settings and not one byte of either credential (its variables, every file in its socket
// dir); `sbx allow --preset npm` allows the mirror in place of registry.npmjs.org. A cargo config that is a link into the
// sandbox's tree is not read.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, realpathSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { CLI, type DaemonProc, killDaemonProc, makeWorld, startDaemonProc, type World } from "../../support/daemon-proc";

const NPM_TOKEN = "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
const PASSWORD = "Pw-7c1e9a0b55d2-corp";

let w: World;
let d: DaemonProc;
let repo = "";
let created = { code: -1, out: "", err: "" };

async function sbx(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn([process.execPath, CLI, ...args], { env: w.env, cwd: repo, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

beforeAll(async () => {
  w = makeWorld();
  const home = w.env.HOME!;
  // The person's settings, as a company laptop has them.
  writeFileSync(join(home, ".npmrc"), `registry=https://npm.corp.example/\n@acme:registry=https://npm.acme.example/\n//npm.corp.example/:_authToken=${NPM_TOKEN}\n`);
  // pip's user file is under XDG_CONFIG_HOME, which the test's world sets.
  mkdirSync(join(w.env.XDG_CONFIG_HOME!, "pip"), { recursive: true });
  writeFileSync(join(w.env.XDG_CONFIG_HOME!, "pip", "pip.conf"), `[global]\nindex-url = https://ann:${PASSWORD}@pypi.corp.example/simple\n`);
  w.env.GOPROXY = "https://goproxy.corp.example,direct";
  w.env.GOPRIVATE = "*.corp.example";
  // A cargo config that is a link into a sandbox's tree (the state root's sandbox dir): never read.
  const planted = join(w.paths.sandboxRoot, "planted", "config.toml");
  mkdirSync(join(planted, ".."), { recursive: true });
  writeFileSync(planted, '[source.crates-io]\nreplace-with = "x"\n[source.x]\nregistry = "sparse+https://evil.example/index/"\n');
  mkdirSync(join(home, ".cargo"));
  symlinkSync(planted, join(home, ".cargo", "config.toml"));
  repo = join(w.root, "repo");
  mkdirSync(repo);
  repo = realpathSync(repo);
  for (const argv of [["git", "init", "-q", "-b", "main", repo], ["git", "-C", repo, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "--allow-empty", "-m", "first"]]) {
    expect(Bun.spawnSync(argv).exitCode).toBe(0);
  }
  d = await startDaemonProc(w, 15_000);
  // The daemon's create (the CLI's verb makes a Docker sandbox; the test daemon's kind is its file-backed fake).
  const lines: string[] = [];
  try {
    await w.client.lifecycle("create", { name: "demo", cwd: repo }, { log: (l) => lines.push(l) });
    created = { code: 0, out: "", err: lines.join("\n") };
  } catch (e) {
    created = { code: 1, out: "", err: `${lines.join("\n")}\n${(e as Error).message}` };
  }
}, 60_000);

afterAll(async () => {
  await killDaemonProc(d);
  w?.cleanup();
});

describe("package-mirrors: sbx create carries the host's mirrors, never its credentials", () => {
  test("sbx create says what was carried, what stayed with the command that binds it, and which hosts are not allowed yet", () => {
    expect({ code: created.code, err: created.err }).toMatchObject({ code: 0 });
    const said = created.err;
    expect(said).toContain("npm registry=https://npm.corp.example/ (~/.npmrc)");
    expect(said).toContain("pip PIP_INDEX_URL=https://pypi.corp.example/simple");
    expect(said).toContain("go GOPROXY=https://goproxy.corp.example,direct ($GOPROXY)");
    expect(said).toContain("sbx secret set NPM_TOKEN_NPM_CORP_EXAMPLE --host npm.corp.example --npmrc");
    expect(said).toContain("sbx secret set PIP_INDEX_AUTH_PYPI_CORP_EXAMPLE --host pypi.corp.example --header 'Authorization: Basic {}'");
    expect(said).toContain("~/.cargo/config.toml: not read: it is reached through a link");
    expect(said).toContain("sbx allow npm.corp.example npm.acme.example pypi.corp.example goproxy.corp.example --sandbox demo");
    expect(said).not.toContain("evil.example");
    expect(said).not.toContain(NPM_TOKEN);
    expect(said).not.toContain(PASSWORD);
  });

  test("no-secret-inside: a session has the mirrors' settings and neither credential, in its variables or any file of its socket dir", async () => {
    // A command's session as the daemon gives it (`sbx exec` of a sandbox with no exec agent): its argv, which holds
    // the session's variables, run here.
    const { argv } = await w.client.lifecycle("session", { name: "demo", cwd: repo, argv: ["sh", "-c", 'env; echo ---; cat "$NPM_CONFIG_GLOBALCONFIG"'], stdin: false, env: {} }, { log() {} });
    const p = Bun.spawnSync(argv, { env: { PATH: w.env.PATH! } });
    const r = { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
    expect(argv.join(" ")).not.toContain(NPM_TOKEN);
    const [env, npmrc] = r.out.split("---\n");
    expect(env).toContain("PIP_INDEX_URL=https://pypi.corp.example/simple\n");
    expect(env).toContain("GOPROXY=https://goproxy.corp.example,direct\n");
    expect(env).toContain("GOPRIVATE=*.corp.example\n");
    expect(npmrc).toBe("registry=https://npm.corp.example/\n@acme:registry=https://npm.acme.example/\n");
    expect(r.out).not.toContain("evil.example");
    // Every file sbx wrote for the sandbox's sessions: its socket dir, where npm's global config is.
    const sockDir = dirname(/^NPM_CONFIG_GLOBALCONFIG=(.*)$/m.exec(env!)![1]!);
    const files = readdirSync(sockDir).map((f) => join(sockDir, f)).filter((f) => statSync(f).isFile());
    expect(files.length).toBeGreaterThan(0);
    for (const text of [r.out, r.err, ...files.map((f) => readFileSync(f, "latin1"))]) {
      expect(text).not.toContain(NPM_TOKEN);
      expect(text).not.toContain(PASSWORD);
    }
  });

  test("sbx allow --preset npm allows the mirror (and the scoped registry) in place of the public registry, and says so", async () => {
    const r = await sbx(["allow", "--preset", "npm", "--sandbox", "demo"]);
    expect(r.code).toBe(0);
    expect(r.err).toContain("npm on this machine uses npm.corp.example (~/.npmrc): allowing it");
    expect(r.err).toContain("in place of the public registry (registry.npmjs.org, registry.yarnpkg.com)");
    const list = JSON.parse((await sbx(["allowlist", "--sandbox", "demo", "--json"])).out) as { sandbox: { patterns: { pattern: string }[] } };
    const patterns = list.sandbox.patterns.map((p) => p.pattern);
    expect(patterns).toEqual(expect.arrayContaining(["npm.corp.example", "npm.acme.example", "npmjs.com"]));
    expect(patterns).not.toContain("registry.npmjs.org");
  });
});
