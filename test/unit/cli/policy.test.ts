// sbx create --policy, sbx policy show|set, sbx list's POLICY, sbx allow --for/--once and sbx approvals allow --once/--for,
// through main() and the daemon's real routes served in this process (Docker on the in-memory engine, real git).
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { levelOf } from "../../../src/core/levels";
import { sandboxLayout } from "../../../src/workspace/layout";
import { baseIdentity } from "../../../src/drivers/identity";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
beforeEach(async () => {
  x = await dockerCliWorld();
  // A repo with npm (and a private registry in its .npmrc) and a GitHub remote.
  writeFileSync(join(x.w.repo, "package.json"), '{"name":"app"}\n');
  writeFileSync(join(x.w.repo, ".npmrc"), "registry=https://npm.corp.example/\n//npm.corp.example/:_authToken=${NPM_TOKEN}\n");
  await x.w.git(x.w.repo, "add", "-A");
  await x.w.git(x.w.repo, "commit", "-qm", "npm");
  await x.w.git(x.w.repo, "remote", "add", "origin", "https://github.com/acme/app.git");
});
afterEach(async () => {
  await x.close();
});
const cli = (argv: string[]) => x.cli(argv);
const row = (name: string) => x.daemon.store.listSandboxes().find((s) => s.name === name)!;
type Show = { level: string | null; allows: { pattern: string; why: string }[]; open: boolean; sandbox: { pattern: string; expiresAt?: number | null; once?: boolean }[]; changed: boolean };
const show = async (name: string): Promise<Show> => JSON.parse((await cli(["policy", "show", name, "--json"])).stdout) as Show;

describe("sbx create --policy and sbx policy", () => {
  test("create --policy balanced: the repo's registries (its files and its .npmrc) and forge, each with why; list shows the level", async () => {
    expect((await cli(["create", "demo", "--policy", "balanced"])).code).toBe(0);
    const v = await show("demo");
    expect(v.level).toBe("balanced");
    const why = Object.fromEntries(v.allows.map((p) => [p.pattern, p.why]));
    expect(why["registry.npmjs.org"]).toBe("npm registry (package.json)");
    expect(why["npm.corp.example"]).toBe("npm registry (.npmrc)");
    expect(why["github.com"]).toBe("forge of remote origin (github.com)");
    expect(why["api.anthropic.com"]).toBe("agent claude: its API");
    expect(why["pypi.org"]).toBeUndefined();
    expect(JSON.stringify(v)).not.toContain("_authToken");
    const [item] = JSON.parse((await cli(["list", "--json"])).stdout) as { level: string }[];
    expect(item!.level).toBe("balanced");
    expect((await cli(["list"])).stdout).toMatch(/^demo .* up +balanced /m);
    const table = (await cli(["policy", "show", "demo"])).stdout;
    expect(table).toContain("level balanced");
    expect(table).toMatch(/registry\.npmjs\.org +level balanced +npm registry \(package\.json\)/);
  });

  test("level-reads-host-repo-only: what the sandbox writes in its clone (remotes, package files) never widens its level", async () => {
    expect((await cli(["create", "demo", "--policy", "balanced"])).code).toBe(0);
    const clone = sandboxLayout(baseIdentity(row("demo"))!.dir).clone;
    // As the agent could: a remote to anywhere and package files of another ecosystem, committed in its clone.
    await x.w.git(clone, "remote", "add", "evil", "https://exfil.example/x.git");
    mkdirSync(join(clone, "py"), { recursive: true });
    writeFileSync(join(clone, "py", "requirements.txt"), "requests\n");
    writeFileSync(join(clone, ".npmrc"), "registry=https://exfil.example/\n");
    await x.w.git(clone, "add", "-A");
    await x.w.git(clone, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-qm", "agent");
    const set = await cli(["policy", "set", "demo", "--level", "balanced"]);
    expect(set.code).toBe(0);
    const patterns = (await show("demo")).allows.map((p) => p.pattern);
    expect(patterns).not.toContain("exfil.example");
    expect(patterns).not.toContain("pypi.org");
    // The person's own repo, changed: read again by `policy set`.
    writeFileSync(join(x.w.repo, "Cargo.toml"), "[package]\n");
    await x.w.git(x.w.repo, "add", "-A");
    await x.w.git(x.w.repo, "commit", "-qm", "rust");
    const again = JSON.parse((await cli(["policy", "set", "demo", "--level", "balanced", "--json"])).stdout) as Show;
    expect(again.changed).toBe(true);
    expect(again.allows.map((p) => p.pattern)).toContain("crates.io");
  });

  test("the config's policy is every new sandbox's level; --policy overrides it; none: no level (the built-in list)", async () => {
    expect((await cli(["create", "plain"])).code).toBe(0);
    expect(levelOf(row("plain").identity)).toBeNull();
    const plain = await show("plain");
    expect(plain.level).toBeNull();
    expect(plain.allows).toEqual([{ pattern: "api.anthropic.com", why: "built in" }]);
    mkdirSync(join(x.w.root, "config", "sbx"), { recursive: true });
    writeFileSync(join(x.w.root, "config", "sbx", "config.json"), JSON.stringify({ policy: "locked" }));
    expect((await cli(["create", "tight"])).code).toBe(0);
    expect(levelOf(row("tight").identity)?.level).toBe("locked");
    expect((await show("tight")).allows).toEqual([]);
    expect((await cli(["policy", "show", "tight"])).stdout).toContain("nothing but sbx's own routes");
    expect((await cli(["create", "wide", "--policy", "open"])).code).toBe(0);
    expect((await show("wide")).open).toBe(true);
    writeFileSync(join(x.w.root, "config", "sbx", "config.json"), JSON.stringify({ policy: "permissive" }));
    const bad = await cli(["create", "bad"]);
    expect(bad.code).toBe(78);
    expect(bad.stderr).toContain("policy");
  });

  test("policy set changes the level (audited) and says when nothing changed; mistakes are usage errors (64)", async () => {
    expect((await cli(["create", "demo"])).code).toBe(0);
    const r = await cli(["policy", "set", "demo", "--level", "open"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("level open");
    expect(levelOf(row("demo").identity)?.level).toBe("open");
    expect((await cli(["policy", "set", "demo", "--level", "open"])).stdout).toContain("level open already");
    expect(x.daemon.store.listAudit({ kind: "allowlist" }).filter((a) => a.action === "level").map((a) => a.detail)).toEqual([expect.objectContaining({ level: "open", from: null })]);
    for (const argv of [["policy"], ["policy", "check-me"], ["policy", "constructor"], ["policy", "show"], ["policy", "set", "demo"], ["policy", "set", "demo", "--level", "permissive"], ["policy", "show", "demo", "--level", "open"], ["create", "x", "--policy", "wide"]]) {
      expect({ argv, code: (await cli(argv)).code }).toEqual({ argv, code: 64 });
    }
    expect((await cli(["policy", "show", "nope"])).code).toBe(66);
  });

  test("--policy sets up a new sandbox: on an existing one it is refused, never ignored", async () => {
    expect((await cli(["create", "demo"])).code).toBe(0);
    const r = await cli(["run", "demo", "--policy", "open", "--", "true"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("--policy");
    expect(levelOf(row("demo").identity)).toBeNull();
  });
});

describe("sbx allow --for/--once, sbx approvals allow --once/--for", () => {
  test("allow --for stores an expiry and says it; --once is one sandbox's; both at once, or a bad time, is 64", async () => {
    expect((await cli(["create", "demo"])).code).toBe(0);
    const before = Date.now();
    const r = await cli(["allow", "a.example", "--sandbox", "demo", "--for", "30m"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("allowed a.example for sandbox 'demo' for 30m");
    const [e] = x.daemon.store.listAllow(row("demo").id);
    expect(e!.expiresAt).toBeGreaterThanOrEqual(before + 30 * 60_000);
    expect(e!.expiresAt).toBeLessThanOrEqual(Date.now() + 30 * 60_000);
    expect((await cli(["allowlist", "--sandbox", "demo"])).stdout).toMatch(/a\.example +sandbox demo .* until /);
    expect((await show("demo")).sandbox).toEqual([expect.objectContaining({ pattern: "a.example", once: false })]);
    for (const argv of [["allow", "b.example", "--global", "--once"], ["allow", "b.example", "--sandbox", "demo", "--once", "--for", "1h"], ["allow", "b.example", "--sandbox", "demo", "--for", "soon"], ["approvals", "deny", "1", "--once"]]) {
      expect({ argv, code: (await cli(argv)).code }).toEqual({ argv, code: 64 });
    }
    expect(x.daemon.store.listAllow(null)).toEqual([]);
  });

  test("approvals allow N --once answers it with a one-time approval; --for with a time", async () => {
    expect((await cli(["create", "demo"])).code).toBe(0);
    const id = row("demo").id;
    const a = x.daemon.store.recordPending(id, "once.example", 443, "not allowed")!;
    const b = x.daemon.store.recordPending(id, "timed.example", 443, "not allowed")!;
    const r = await cli(["approvals", "allow", String(a.id), "--once"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("allowed once.example for sandbox 'demo' once");
    expect((await cli(["approvals", "allow", String(b.id), "--for", "2h"])).stdout).toContain("for 2h");
    const byPattern = Object.fromEntries(x.daemon.store.listAllow(id).map((e) => [e.pattern, e]));
    expect(byPattern["once.example"]).toMatchObject({ once: true });
    expect(byPattern["timed.example"]).toMatchObject({ once: false, expiresAt: expect.any(Number) });
    expect(x.daemon.store.listApprovals({ state: "pending" })).toEqual([]);
    expect(x.daemon.events.filter((e) => e.kind === "decision").map((e) => e.kind === "decision" && e.term)).toEqual(["once (one connection)", "for 2h"]);
  });
});
