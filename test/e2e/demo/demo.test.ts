// The quickstart that proves it: `sbx demo` for real, every step PASS, and nothing left behind (also after ^C).
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { rootLabel } from "../../../src/drivers/docker/args";
import { cannotCreateUsers, createTestUser } from "../../support/test-user";

const CLI = join(import.meta.dir, "../../../src/cli/main.ts");

function ok(argv: string[]): boolean {
  return Bun.spawnSync(argv, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
}

function whyNot(): string | undefined {
  if (process.getuid?.() !== 0) return "not root (the demo may need to build its base image, and the test inspects Docker as root)";
  if (!ok(["docker", "info"])) return "no Docker engine answers";
  return undefined;
}
const skipReason = whyNot();

const STEP_IDS = [
  "sandbox",
  "allowed-site",
  "blocked-site",
  "approval-pending",
  "allow-then-reach",
  "direct-tcp",
  "dns",
  "push",
  "token-absent",
  "secret-scan",
  "host-sees-commit",
  "private-registry",
];

function docker(args: string[]): string[] {
  const r = Bun.spawnSync(["docker", ...args], { stdout: "pipe", stderr: "pipe" });
  return r.stdout.toString().split("\n").map((s) => s.trim()).filter(Boolean);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Everything the demo could leave behind, for its temporary root. */
function leftovers(root: string, daemonPid: number | null): string[] {
  const out: string[] = [];
  if (existsSync(root)) out.push(`dir ${root}`);
  if (daemonPid !== null && alive(daemonPid)) out.push(`daemon pid ${daemonPid}`);
  const repo = join(root, "demo");
  for (const id of docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${repo}`])) out.push(`container ${id}`);
  for (const v of docker(["volume", "ls", "--quiet", "--filter", `label=sbx.repo=${repo}`])) out.push(`volume ${v}`);
  // Everything of the demo's own state root (the label the Docker backend scopes its cleanup by).
  const rl = rootLabel(join(root, "cache", "sandbox"));
  for (const id of docker(["ps", "--all", "--quiet", "--filter", `label=sbx.root=${rl}`])) out.push(`container ${id} (sbx.root)`);
  for (const v of docker(["volume", "ls", "--quiet", "--filter", `label=sbx.root=${rl}`])) out.push(`volume ${v} (sbx.root)`);
  // Anything labelled with a sandbox dir under the demo's own cache.
  for (const line of docker(["ps", "--all", "--format", '{{.ID}} {{.Label "sbx.dir"}}'])) {
    const [id, dir] = line.split(" ");
    if (dir?.startsWith(root + "/")) out.push(`container ${id} (sbx.dir ${dir})`);
  }
  return out;
}

interface Report {
  ok: boolean;
  steps: Array<{ id: string; tried: string; expected: string; happened: string; pass: boolean }>;
  notes: string[];
  root: string;
  kept: boolean;
  daemonPid: number | null;
  interrupted: boolean;
}

describe.skipIf(skipReason !== undefined)(`sbx demo (real Docker, loopback only)${skipReason ? ` — skipped: ${skipReason}` : ""}`, () => {
  test("sbx demo --json: every step passes, and it leaves no sandbox, container, volume, daemon or temp dir", async () => {
    const p = Bun.spawn(["bun", CLI, "demo", "--json"], { stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    let report: Report;
    try {
      report = JSON.parse(out);
    } catch {
      throw new Error(`sbx demo --json printed no JSON (exit ${code}):\n${out}\n${err}`);
    }
    const failed = report.steps.filter((s) => !s.pass).map((s) => `${s.id}: ${s.happened}`);
    expect(failed).toEqual([]);
    expect(report.steps.map((s) => s.id)).toEqual(STEP_IDS);
    expect(report.ok).toBe(true);
    expect(code).toBe(0);
    expect(report.kept).toBe(false);
    expect(report.root).toMatch(/^\/tmp\/sbx-demo-/);
    expect(typeof report.daemonPid).toBe("number");
    // It said which base image it used and why, and why the loopback site is published (never allowlisted).
    expect(report.notes.some((n) => n.startsWith("base image: "))).toBe(true);
    expect(report.notes.some((n) => n.includes("runs on this machine's loopback, which no allowlist reaches"))).toBe(true);
    expect(leftovers(report.root, report.daemonPid)).toEqual([]);
  }, 900_000);

  test.skipIf(cannotCreateUsers() !== undefined)(`as a normal user in the docker group: every step passes, nothing left behind${cannotCreateUsers() ? ` — skipped: ${cannotCreateUsers()}` : ""}`, () => {
    const user = createTestUser({ name: "sbxt-demo" });
    let image: string | undefined;
    try {
      const r = user.run(["bun", CLI, "demo", "--json"], { cwd: user.home, env: { NO_COLOR: "1" } });
      const report = JSON.parse(r.stdout) as Report;
      image = /docker image rm (\S+) removes it/.exec(report.notes.join("\n"))?.[1];
      expect(report.steps.filter((s) => !s.pass).map((s) => `${s.id}: ${s.happened}`)).toEqual([]);
      expect(report.steps.map((s) => s.id)).toEqual(STEP_IDS);
      expect(r.code).toBe(0);
      expect(leftovers(report.root, report.daemonPid)).toEqual([]);
    } finally {
      // The image carries this user's uid and name; the user goes, so does it.
      if (image) docker(["image", "rm", image]);
      user.remove();
    }
  }, 900_000);

  test("^C during the demo: it stops after the current step, cleans up everything and exits 130", async () => {
    const p = Bun.spawn(["bun", CLI, "demo"], { stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
    let out = "";
    let err = "";
    const dec = new TextDecoder();
    const readErr = (async () => {
      for await (const c of p.stderr) err += dec.decode(c, { stream: true });
    })();
    const reader = p.stdout.getReader();
    // Interrupt once the sandbox exists and the agent's steps are running.
    while (!/^(PASS|FAIL) {2}allowed-site/m.test(out)) {
      const { value, done } = await reader.read();
      if (done) break;
      out += dec.decode(value, { stream: true });
    }
    p.kill("SIGINT");
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      out += dec.decode(value, { stream: true });
    }
    const code = await p.exited;
    await readErr;
    const root = /working in (\/tmp\/sbx-demo-[A-Za-z0-9]+)/.exec(err)?.[1];
    const pid = Number(/own sbx daemon \(pid (\d+)\)/.exec(err)?.[1] ?? NaN);
    expect(root).toBeDefined();
    expect(Number.isInteger(pid)).toBe(true);
    expect(code).toBe(130);
    expect(out).toContain("interrupted after");
    expect(err).toContain("cleaned up");
    expect(leftovers(root!, pid)).toEqual([]);
  }, 900_000);
});
