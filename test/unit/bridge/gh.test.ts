// gh through the bridge: runs on the host with GH_TOKEN in its env only, --repo from the host's remote, the body file read by the bridge.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeExec } from "../../fakes/exec";
import { createBridgeApp, type AuditEvent } from "../../../src/bridge/server";

const roots: string[] = [];
afterAll(() => roots.forEach((d) => rmSync(d, { recursive: true, force: true })));

function setup() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-gh-")));
  roots.push(root);
  const ws = join(root, "clone");
  mkdirSync(ws);
  writeFileSync(join(ws, "body.md"), "PR body from the sandbox\n");
  const exec = new FakeExec();
  exec.always((a) => a[0] === "git" && a.includes("init"), {});
  exec.always((a) => a[0] === "git" && a.includes("--git-common-dir"), { stdout: join(root, "host/.git") + "\n" });
  exec.always((a) => a[0] === "git" && a.includes("--get-regexp"), { stdout: "remote.origin.url git@github.com:acme/widgets.git\n" });
  const audit: AuditEvent[] = [];
  const app = createBridgeApp({
    sandbox: { id: "id1", name: "demo", workspace: ws, workspaceView: "/home/u/widgets", repo: join(root, "host") },
    gateDir: join(root, "gate"),
    secrets: () => ({ GH_TOKEN: "ghp_hostTokenValue123456" }),
    audit: (e) => audit.push(e),
    exec,
  });
  const call = async (args: string[], branch = "feature") => {
    const body = JSON.stringify({ tool: "gh", args, cwd: "/home/u/widgets", branch }) + "\n";
    const res = await app.request("/v1/run", { method: "POST", body });
    return (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as { t: string; d?: string; code?: number });
  };
  return { exec, audit, call, root };
}

describe("gh through the bridge", () => {
  test("pr create: --repo from the host remote, --head from the sandbox's branch, body on stdin, token only in env", async () => {
    const { exec, call, audit, root } = setup();
    exec.expect((a) => a[0] === "gh", (_a, opts) => {
      expect(opts.replaceEnv).toBe(true);
      expect(opts.env?.GH_TOKEN).toBe("ghp_hostTokenValue123456");
      expect(opts.cwd).toBe(join(root, "gate", "gh"));
      expect(new TextDecoder().decode(opts.stdin as Uint8Array)).toBe("PR body from the sandbox\n");
      return { stdout: "https://github.com/acme/widgets/pull/7 (token ghp_hostTokenValue123456)\n" };
    });
    const frames = await call(["pr", "create", "--title", "Add x", "--body-file", "body.md"]);
    const gh = exec.calls.find((c) => c.argv[0] === "gh")!;
    expect(gh.argv).toEqual(["gh", "pr", "create", "--title=Add x", "--body-file", "-", "--repo", "acme/widgets", "--head=feature"]);
    expect(JSON.stringify(gh.argv)).not.toContain("ghp_host");
    expect(frames).toContainEqual({ t: "out", d: "https://github.com/acme/widgets/pull/7 (token [REDACTED])\n" });
    expect(frames.at(-1)).toEqual({ t: "exit", code: 0 });
    expect(audit[0]).toMatchObject({ tool: "gh", decision: "allowed", exitCode: 0 });
    exec.assertDone();
  });

  test("a refused gh command never runs gh, and is audited", async () => {
    const { exec, call, audit } = setup();
    const frames = await call(["auth", "token"]);
    expect(frames.at(-1)).toEqual({ t: "exit", code: 77 });
    expect(exec.calls.some((c) => c.argv[0] === "gh")).toBe(false);
    expect(audit[0]).toMatchObject({ decision: "refused" });
  });

  test("a malformed request is a 400 with the wire error shape", async () => {
    const { root } = setup();
    const exec = new FakeExec();
    const app = createBridgeApp({ sandbox: { id: "i", name: "n", workspace: root, repo: root }, gateDir: join(root, "g2"), secrets: () => ({}), audit: () => undefined, exec });
    const res = await app.request("/v1/run", { method: "POST", body: '{"tool":"sh","args":[]}\n' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "usage" });
  });
});
