// The command `sbx run AGENT` runs inside, run here by a real sh with sbx's real setup on this Bun: the setup applies
// its plan and stamps it; a start with the same plan costs no Bun; a new plan is applied; the agent gets its flags and
// the caller's arguments; a sandbox made before agents were supplied is told what to do.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentLaunchArgv } from "../../../src/agents/service";
import { CopyIn } from "../../../src/secrets/copy-in";

/** The copy-in door with one host secret (a value with no shape: found only as the host's own). */
const PLAIN = "correct-horse-battery-staple-42";
const door = () => new CopyIn({ SERVICE_PASSWORD: PLAIN }, { home: "/home/ann" });

const root = mkdtempSync(join(tmpdir(), "sbx-agent-launch-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const shims = join(import.meta.dir, "../../../shims");

function launch(home: string, sandbox: string, args: string[]): { code: number; out: string; err: string } {
  const argv = agentLaunchArgv({ agent: "claude", sandbox, workdir: "/w", place: { bun: process.execPath, shims, inside: "/opt/sbx/agents" }, unattended: true, door: door() });
  // The launcher's place is /opt/sbx/agents/bin/claude inside; here, a fake agent at that index of the argv.
  const i = argv.indexOf("/opt/sbx/agents/bin/claude");
  const fake = join(root, "fake-claude");
  writeFileSync(fake, '#!/bin/sh\necho agent "$@"\n');
  chmodSync(fake, 0o755);
  argv[i] = fake;
  const r = Bun.spawnSync(argv.concat(args), { env: { HOME: home, PATH: "/usr/bin:/bin" }, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

describe("the launch command", () => {
  test("first start: setup applied and stamped; same plan again: no setup (a removed section stays removed); a new plan: applied", () => {
    const home = join(root, "h1");
    mkdirSync(home);
    const first = launch(home, "demo", ["-p", "hi"]);
    expect(first.err).toBe("");
    expect(first.out).toBe("agent --dangerously-skip-permissions -p hi\n");
    const md = join(home, ".claude/CLAUDE.md");
    expect(readFileSync(md, "utf8")).toContain("sandbox `demo`");
    expect(readFileSync(join(home, ".config/sbx/agent-setup/claude"), "utf8")).toMatch(/^[0-9a-f]{32}\n$/);
    rmSync(md);
    expect(launch(home, "demo", []).code).toBe(0);
    expect(existsSync(md)).toBe(false);
    expect(launch(home, "other", []).code).toBe(0);
    expect(readFileSync(md, "utf8")).toContain("sandbox `other`");
  });

  test("a sandbox without the agent cache mounted: exit 69 and how to get it", () => {
    const argv = agentLaunchArgv({ agent: "codex", sandbox: "old", workdir: "/w", place: { bun: process.execPath, shims, inside: "/opt/sbx/agents" }, unattended: false, door: door() });
    const r = Bun.spawnSync(argv, { env: { HOME: root, PATH: "/usr/bin:/bin" }, stdout: "pipe", stderr: "pipe" });
    expect(r.exitCode).toBe(69);
    expect(r.stderr.toString()).toContain("sbx: this sandbox was made before sbx supplied agents (no /opt/sbx/agents/bin/codex); remove it with `sbx rm old` and run again");
  });

  test("copy-in-scanned: the first-run files go through the door: one that holds a host secret (here base64, in a login file) is left out whole, said by field, and the rest applies", () => {
    const d = door();
    const extra = [
      { kind: "file" as const, path: ".codex/auth.json", content: `{"note":"${Buffer.from(PLAIN).toString("base64")}"}\n` },
      { kind: "json-set" as const, path: ".gemini/settings.json", values: { security: { auth: { selectedType: "gemini-api-key" } } } },
    ];
    const argv = agentLaunchArgv({ agent: "codex", sandbox: "s", workdir: "/w", place: { bun: process.execPath, shims, inside: "/opt/sbx/agents" }, unattended: false, extra, door: d });
    const all = argv.join("\n");
    expect(all).not.toContain(Buffer.from(PLAIN).toString("base64"));
    expect(all).not.toContain(".codex/auth.json");
    expect(all).toContain("gemini-api-key");
    expect(d.findings.map((f) => f.field)).toEqual(["setup[0].content"]);
  });
});

describe("no silent failure: an agent with no login sbx can add is refused up front, with the fix", () => {
  const { AgentService } = require("../../../src/agents/service") as typeof import("../../../src/agents/service");
  function service(env: Record<string, string>) {
    const asked: string[] = [];
    const sandboxes = new Proxy({}, { get: (_t, k) => (...args: unknown[]) => (asked.push(String(k)), k === "repoOf" ? Promise.resolve("/r") : Promise.reject(new Error(`${String(k)} was asked for`))) });
    const s = new AgentService({
      sandboxes: sandboxes as never,
      store: { findSandbox: () => null } as never,
      paths: { cacheDir: "/nonexistent" } as never,
      exec: {} as never,
      kinds: ["docker"],
      policy: () => ({}) as never,
      arch: "x64",
      keys: () => ({ env }),
    });
    return { s, asked };
  }
  test("claude with no key or login on the host: refused before any sandbox is made, naming what sets one", async () => {
    const { s, asked } = service({});
    const e = await s.run({ agent: "claude", cwd: "/r", unattended: true } as never).catch((x: unknown) => x as Error & { hint?: string });
    expect((e as Error).message).toContain("no login for Claude Code");
    expect((e as { hint?: string }).hint).toContain("sbx secret set ANTHROPIC_API_KEY");
    expect(asked.filter((k) => k !== "repoOf")).toEqual([]);
  });
  test("with a key in the host's environment, it goes on (to the sandbox)", async () => {
    const { s, asked } = service({ ANTHROPIC_API_KEY: "sk-ant-api03-" + "x".repeat(40) });
    await s.run({ agent: "claude", cwd: "/r", unattended: true } as never).catch(() => undefined);
    expect(asked.some((k) => k !== "repoOf")).toBe(true);
  });
});
