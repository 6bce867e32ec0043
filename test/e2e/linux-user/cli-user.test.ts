// The CLI with --backend user, as root, for real: create, run as the guest (its own account and proxy port), list, stop, rm.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cliWorld, sh, whyNot } from "./harness";

const skip = whyNot();
const CLI = join(import.meta.dir, "../../../src/cli/main.ts");

describe.skipIf(skip !== undefined)(`sbx --backend user through the CLI${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let root = "";
  let repo = "";
  let env: Record<string, string> = {};
  const sbx = (args: string[]) => {
    const p = Bun.spawnSync([process.execPath, CLI, ...args], { cwd: repo, env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
  };

  beforeAll(() => {
    ({ root, repo, env } = cliWorld("sbx-cliuser"));
  });

  afterAll(() => {
    sbx(["rm", "--force", "cu"]);
    // The daemon this CLI started, by its pid file (ours).
    for (const f of [join(env.XDG_RUNTIME_DIR ?? "", "sbx", "daemon.pid")]) {
      if (!existsSync(f)) continue;
      const pid = Number(readFileSync(f, "utf8").trim());
      if (pid > 0) sh(["kill", String(pid)]);
    }
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  test("Docker-only options are refused with --backend user", () => {
    const r = sbx(["create", "--backend", "user", "--rebuild", "cu"]);
    expect(r.code).toBe(64);
    expect(r.err).toContain("--rebuild applies to Docker sandboxes");
  });

  test("create, run as the guest through its own proxy port, list, stop, rm", () => {
    const c = sbx(["create", "--backend", "user", "cu"]);
    expect({ code: c.code, err: c.err }).toMatchObject({ code: 0 });
    expect(c.out).toContain("(linux-user)");

    const r = sbx(["run", "cu", "--", "sh", "-c", 'id -un; echo "$HTTP_PROXY"; git -C "$PWD" log --format=%s -1']);
    expect(r.code).toBe(0);
    const [who, proxy, subject] = r.out.trim().split("\n");
    expect(who).toMatch(/^sbx-root-/);
    expect(proxy).toMatch(/^http:\/\/127\.0\.0\.1:2\d{4}$/);
    expect(subject).toBe("init");

    const code = sbx(["run", "cu", "--", "sh", "-c", "exit 7"]);
    expect(code.code).toBe(7);

    const l = sbx(["list", "--json"]);
    expect(l.code).toBe(0);
    expect(l.out).toContain('"cu"');

    expect(sbx(["stop", "cu"]).code).toBe(0);
    const rm = sbx(["rm", "--force", "cu"]);
    expect(rm.code).toBe(0);
    expect(sh(["id", who!]).code).not.toBe(0);
  }, 120_000);
});
