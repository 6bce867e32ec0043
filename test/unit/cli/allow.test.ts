// sbx allow / deny / allowlist / approvals through main() and the daemon's policy routes (served in this process):
// scopes, presets, too-broad refusal (64), approvals deciding, and every decision on the daemon's live feed.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PRESETS } from "../../../src/core/presets";
import { parsePattern } from "../../../src/core/allowlist";
import { Store } from "../../../src/store/store";
import { FakeExec } from "../../fakes/exec";
import { runCli } from "../../support/cli";
import { serveInprocDaemon, type InprocDaemon } from "../../support/inproc-daemon";

let root: string;
let repo: string;
let exec: FakeExec;
let vars: Record<string, string>;
let dbFile: string;
let daemon: InprocDaemon;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "sbx-allow-"));
  repo = join(root, "repo");
  mkdirSync(repo);
  repo = realpathSync(repo);
  // The CLI's and the daemon's environment alike: one state dir, one runtime dir (the control socket).
  vars = { HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), XDG_CONFIG_HOME: join(root, "config"), XDG_CACHE_HOME: join(root, "cache"), XDG_RUNTIME_DIR: join(root, "run") };
  dbFile = join(root, "state", "sbx", "sbx.db");
  exec = new FakeExec().always((argv) => argv[0] === "git" && argv.includes("rev-parse"), { stdout: `${repo}\n` });
  const store = new Store(dbFile);
  store.createSandbox({ name: "demo", repo, backend: "fake" });
  store.createSandbox({ name: "other", repo, backend: "fake" });
  store.close();
  daemon = serveInprocDaemon({ ...vars, PATH: process.env.PATH }, exec);
});
afterEach(async () => {
  await daemon.stop();
  rmSync(root, { recursive: true, force: true });
});

const cli = (argv: string[]) => runCli(argv, { exec, vars, cwd: repo });
const withStore = <T>(fn: (s: Store) => T): T => {
  const s = new Store(dbFile);
  try {
    return fn(s);
  } finally {
    s.close();
  }
};

describe("sbx allow", () => {
  test("adds canonical patterns to the named sandbox only", async () => {
    const r = await cli(["allow", "Example.COM.", "*.Bücher.de", "--sandbox", "demo"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("allowed example.com for sandbox 'demo'");
    expect(r.stdout).toContain("allowed *.xn--bcher-kva.de");
    withStore((s) => {
      const demo = s.findSandbox(repo, "demo")!;
      const other = s.findSandbox(repo, "other")!;
      expect(s.listAllow(demo.id).map((e) => e.pattern)).toEqual(["*.xn--bcher-kva.de", "example.com"]);
      expect(s.listAllow(other.id)).toEqual([]);
      expect(s.listAllow(null)).toEqual([]);
    });
    const again = await cli(["allow", "example.com", "--sandbox", "demo"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("already allowed");
  });

  test("--global and --preset", async () => {
    const r = await cli(["allow", "--preset", "github", "--global"]);
    expect(r.code).toBe(0);
    withStore((s) => expect(s.listAllow(null).map((e) => e.pattern).sort()).toEqual([...PRESETS.github].sort()));
  });

  test("too-broad patterns are refused with exit 64 and a hint; nothing is added", async () => {
    const r = await cli(["allow", "ok.example", "*.com", "--sandbox", "demo"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("*.com");
    expect(r.stderr).toContain("top-level");
    expect(r.stderr).toContain("hint:");
    withStore((s) => expect(s.listAllow(s.findSandbox(repo, "demo")!.id)).toEqual([]));
  });

  test("scope is required, exclusive, and the sandbox must exist", async () => {
    expect((await cli(["allow", "example.com"])).code).toBe(64);
    expect((await cli(["allow", "example.com", "--global", "--sandbox", "demo"])).code).toBe(64);
    const missing = await cli(["allow", "example.com", "--sandbox", "nope"]);
    expect(missing.code).toBe(66);
    expect(missing.stderr).toContain("no sandbox 'nope'");
    expect((await cli(["allow", "--preset", "nosuch", "--global"])).stderr).toContain("unknown preset");
  });

  test("allow answers the pending approvals it covers, and the daemon's feed (dashboard, chat, notifications) hears of it", async () => {
    const demo = withStore((s) => s.findSandbox(repo, "demo")!);
    withStore((s) => s.recordPending(demo.id, "api.example.com", 443, "not on the allowlist"));
    const r = await cli(["allow", "api.example.com", "--sandbox", "demo"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("1 pending request answered");
    withStore((s) => expect(s.listApprovals({ state: "pending" })).toEqual([]));
    expect(daemon.events.map((e) => e.kind === "decision" && [e.action, e.pattern, e.scope, e.by])).toEqual([["allow", "api.example.com", "sandbox", "cli:tester"]]);
  });

  test("with --repo, a name is looked up in that repo only: another repo's sandbox of that name is not found", async () => {
    withStore((s) => s.createSandbox({ name: "elsewhere", repo: "/some/other/repo", backend: "fake" }));
    const r = await cli(["allow", "example.com", "--sandbox", "elsewhere", "--repo", repo]);
    expect(r.code).toBe(66);
    expect(r.stderr).toContain(`no sandbox 'elsewhere' in ${repo}`);
    withStore((s) => expect(s.listAllow(s.listSandboxes().find((x) => x.name === "elsewhere")!.id)).toEqual([]));
  });
});

describe("sbx deny and sbx allowlist", () => {
  test("deny removes; removing what is not there exits 66", async () => {
    await cli(["allow", "a.example", "b.example", "--sandbox", "demo"]);
    const r = await cli(["deny", "A.example.", "--sandbox", "demo"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("removed a.example");
    expect((await cli(["deny", "a.example", "--sandbox", "demo"])).code).toBe(66);
    withStore((s) => expect(s.listAllow(s.findSandbox(repo, "demo")!.id).map((e) => e.pattern)).toEqual(["b.example"]));
  });

  test("allowlist --json shows the sandbox, global and built-in lists", async () => {
    await cli(["allow", "a.example", "--sandbox", "demo"]);
    await cli(["allow", "g.example", "--global"]);
    const r = await cli(["allowlist", "--sandbox", "demo", "--json"]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.sandbox.name).toBe("demo");
    expect(j.sandbox.patterns.map((p: { pattern: string }) => p.pattern)).toEqual(["a.example"]);
    expect(j.global.map((p: { pattern: string }) => p.pattern)).toEqual(["g.example"]);
    expect(j.builtin).toEqual(["api.anthropic.com"]);
    expect(j.global[0].addedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const table = await cli(["allowlist", "--sandbox", "demo"]);
    expect(table.stdout).toMatch(/a\.example\s+sandbox demo\s+\S+\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+for good$/m);
    expect(table.stdout).toMatch(/api\.anthropic\.com\s+built-in/);
  });
});

describe("sbx approvals", () => {
  test("lists pending newest first with counts; allow adds the host to that sandbox's list", async () => {
    let t = 1_000;
    const ids = withStore((s) => {
      const st = new Store(dbFile, { now: () => (t += 1000) });
      try {
        const demo = st.findSandbox(repo, "demo")!;
        const a = st.recordPending(demo.id, "old.example", 443, "not-allowlisted: old.example is not on the allowlist")!;
        const b = st.recordPending(demo.id, "new.example", 8443, "port-not-allowed")!;
        st.recordPending(demo.id, "new.example", 8443, "port-not-allowed");
        return { a: a.id, b: b.id, demo: demo.id };
      } finally {
        st.close();
      }
    });
    const list = await cli(["approvals", "--json"]);
    expect(list.code).toBe(0);
    const pending = JSON.parse(list.stdout);
    expect(pending.map((p: { host: string; count: number; sandbox: string }) => [p.host, p.count, p.sandbox])).toEqual([
      ["new.example", 2, "demo"],
      ["old.example", 1, "demo"],
    ]);
    // Times: ISO 8601 in --json and off a terminal (the store's clock here is 1970).
    expect(pending[0].lastSeen).toBe("1970-01-01T00:00:04Z");
    expect(pending[0].firstSeen).toBe("1970-01-01T00:00:03Z");
    const table = await cli(["approvals"]);
    expect(table.stdout).toMatch(/new\.example:8443\s+2\s+1970-01-01T00:00:04Z\s/);

    const ok = await cli(["approvals", "allow", String(ids.b)]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("allowed new.example:8443 for sandbox 'demo'");
    const no = await cli(["approvals", "deny", String(ids.a)]);
    expect(no.code).toBe(0);
    withStore((s) => {
      expect(s.listAllow(ids.demo).map((e) => e.pattern)).toEqual(["new.example:8443"]);
      expect(s.listApprovals({ state: "pending" })).toEqual([]);
    });
    expect((await cli(["approvals", "allow", String(ids.b)])).code).toBe(66);
    expect((await cli(["approvals", "maybe", "1"])).code).toBe(64);
    expect((await cli(["approvals", "allow"])).code).toBe(64);
  });
});

describe("--sandbox NAME from any directory", () => {
  test("this repo's sandbox first; else the one sandbox of that name anywhere; two elsewhere need --repo", async () => {
    const s = new Store(dbFile);
    s.createSandbox({ name: "solo", repo: join(root, "elsewhere"), backend: "fake" });
    s.createSandbox({ name: "dup", repo: join(root, "a"), backend: "fake" });
    s.createSandbox({ name: "dup", repo: join(root, "b"), backend: "fake" });
    s.createSandbox({ name: "demo", repo: join(root, "c"), backend: "fake" });
    s.close();
    expect((await cli(["allow", "solo.example", "--sandbox", "solo"])).code).toBe(0);
    expect((await cli(["allow", "here.example", "--sandbox", "demo"])).code).toBe(0);
    const dup = await cli(["allow", "dup.example", "--sandbox", "dup"]);
    expect(dup.code).toBe(64);
    expect(dup.stderr).toContain(`in 2 repos: ${join(root, "a")}, ${join(root, "b")}`);
    const none = await cli(["allow", "x.example", "--sandbox", "nobody"]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain("no sandbox 'nobody'");
    const st = new Store(dbFile);
    try {
      expect(st.listAllow(st.findSandbox(join(root, "elsewhere"), "solo")!.id).map((e) => e.pattern)).toEqual(["solo.example"]);
      expect(st.listAllow(st.findSandbox(repo, "demo")!.id).map((e) => e.pattern)).toContain("here.example");
      expect(st.listAllow(st.findSandbox(join(root, "c"), "demo")!.id)).toEqual([]);
    } finally {
      st.close();
    }
  });
});

describe("presets", () => {
  test("allowlist --presets lists them; allow --preset adds one; deny --preset takes it back", async () => {
    const list = await cli(["allowlist", "--presets", "--json"]);
    expect(Object.keys(JSON.parse(list.stdout))).toEqual(expect.arrayContaining(["claude", "npm", "pypi", "crates", "go", "github-releases", "debian", "ubuntu"]));
    expect((await cli(["allow", "--preset", "crates", "--sandbox", "demo"])).code).toBe(0);
    withStore((s) => expect(s.listAllow(s.findSandbox(repo, "demo")!.id).map((e) => e.pattern).sort()).toEqual([...PRESETS.crates].sort()));
    expect((await cli(["deny", "--preset", "crates", "--sandbox", "demo"])).code).toBe(0);
    withStore((s) => expect(s.listAllow(s.findSandbox(repo, "demo")!.id)).toEqual([]));
    expect((await cli(["deny", "--preset", "nope", "--sandbox", "demo"])).code).toBe(64);
    expect((await cli(["deny", "--sandbox", "demo"])).code).toBe(64);
  });
  test("every preset's patterns pass the allowlist's own rules", () => {
    for (const [name, ps] of Object.entries(PRESETS)) for (const p of ps) expect({ name, p, ok: parsePattern(p).ok }).toEqual({ name, p, ok: true });
  });
});
