// gh through the bridge: runs on the host with its token in a private config dir (never its env), --repo from the host's remote, the body file read once by the bridge.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeExec } from "../../fakes/exec";
import { forgeRepo, readNamedFile } from "../../../src/bridge/gh-run";
import { createBridgeApp, type AuditEvent } from "../../../src/bridge/server";

const roots: string[] = [];
const readdirOrEmpty = (d: string) => (existsSync(d) ? readdirSync(d) : []);
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
  test("pr create: --repo from the host remote, --head from the sandbox's branch, body on stdin, the token in a private hosts.yml only", async () => {
    const { exec, call, audit, root } = setup();
    let configDir = "";
    exec.expect((a) => a[0] === "gh", (_a, opts) => {
      expect(opts.replaceEnv).toBe(true);
      // No token in gh's environment: `--jq '$ENV'` or a template reads only what is there.
      expect(JSON.stringify(opts.env)).not.toContain("ghp_host");
      configDir = opts.env!.GH_CONFIG_DIR!;
      expect(readFileSync(join(configDir, "hosts.yml"), "utf8")).toBe("'github.com':\n    oauth_token: 'ghp_hostTokenValue123456'\n    git_protocol: https\n");
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
    // The config dir lived for that one call.
    expect(existsSync(configDir)).toBe(false);
    exec.assertDone();
  });

  test("gh repo view names the host's own repository as its argument; naming another is refused", async () => {
    const { exec, call } = setup();
    exec.expect((a) => a[0] === "gh", { stdout: "acme/widgets\n" });
    expect((await call(["repo", "view", "--json", "name"])).at(-1)).toEqual({ t: "exit", code: 0 });
    expect(exec.calls.find((c) => c.argv[0] === "gh")!.argv).toEqual(["gh", "repo", "view", "--json=name", "--", "acme/widgets"]);
    const other = await call(["repo", "view", "evil/secrets"]);
    expect(other.at(-1)).toEqual({ t: "exit", code: 77 });
    expect(other.find((f) => f.t === "err")!.d).toContain("this sandbox's repository only");
  });

  test("gh --version runs with no token anywhere; gh auth status is answered by the bridge and never shows the token", async () => {
    const { exec, call } = setup();
    exec.expect(["gh", "--version"], (_a, opts) => {
      expect(readdirOrEmpty(opts.env!.GH_CONFIG_DIR!)).toEqual([]);
      return { stdout: "gh version 2.23.0\n" };
    });
    expect(await call(["--version"])).toContainEqual({ t: "out", d: "gh version 2.23.0\n" });
    const st = await call(["auth", "status"]);
    expect(st.at(-1)).toEqual({ t: "exit", code: 0 });
    expect(JSON.stringify(st)).toContain("Logged in to github.com through the sbx bridge");
    expect(JSON.stringify(st)).not.toContain("ghp_host");
    expect((await call(["auth", "status", "--show-token"])).at(-1)).toEqual({ t: "exit", code: 77 });
    exec.assertDone();
  });

  test("--body-file is read once by descriptor: a symlink (to a host file) or a FIFO in its place is refused", async () => {
    const { exec, call, root } = setup();
    writeFileSync(join(root, "host-secret"), "the host's secret\n");
    symlinkSync(join(root, "clone", "body.md"), join(root, "clone", "link.md"));
    rmSync(join(root, "clone", "body.md"));
    symlinkSync(join(root, "host-secret"), join(root, "clone", "body.md"));
    const r = await call(["pr", "create", "--title", "x", "--body-file", "body.md"]);
    expect(r.at(-1)).toEqual({ t: "exit", code: 77 });
    expect(exec.calls.some((c) => c.argv[0] === "gh")).toBe(false);
    rmSync(join(root, "clone", "body.md"));
    Bun.spawnSync(["mkfifo", join(root, "clone", "body.md")]);
    const f = await call(["pr", "create", "--title", "x", "--body-file", "body.md"]);
    expect(f.at(-1)).toEqual({ t: "exit", code: 77 });
    expect(JSON.stringify(f)).toContain("not a regular file");
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

describe("readNamedFile (what the bridge reads of a path the sandbox named, after the path check)", () => {
  test("a file swapped for a symlink, or a parent dir swapped for one, after the check: refused by the open itself", () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-readfd-")));
    roots.push(root);
    const ws = join(root, "ws");
    mkdirSync(join(ws, "docs"), { recursive: true });
    mkdirSync(join(root, "outside"));
    writeFileSync(join(root, "outside", "body.md"), "host secret\n");
    writeFileSync(join(ws, "docs", "body.md"), "fine\n");
    expect(readNamedFile(join(ws, "docs", "body.md"), ws, 100)).toEqual({ bytes: new TextEncoder().encode("fine\n") });
    expect(readNamedFile(join(ws, "docs", "body.md"), ws, 2)).toEqual({ error: `${join(ws, "docs", "body.md")} is larger than 2 bytes` });
    rmSync(join(ws, "docs", "body.md"));
    symlinkSync(join(root, "outside", "body.md"), join(ws, "docs", "body.md"));
    expect("error" in readNamedFile(join(ws, "docs", "body.md"), ws, 100)).toBe(true);
    rmSync(join(ws, "docs"), { recursive: true });
    symlinkSync(join(root, "outside"), join(ws, "docs"));
    const r = readNamedFile(join(ws, "docs", "body.md"), ws, 100);
    expect(r).toEqual({ error: `${join(ws, "docs", "body.md")} resolves outside the sandbox's workspace` });
  });
});

describe("forgeRepo", () => {
  test("https and ssh remotes of any forge host; anything else is none", () => {
    expect(forgeRepo("git@github.com:acme/widgets.git")).toEqual({ host: "github.com", path: "acme/widgets" });
    expect(forgeRepo("https://x-access-token:t@GHE.example.com/acme/widgets")).toEqual({ host: "ghe.example.com", path: "acme/widgets" });
    expect(forgeRepo("https://127.0.0.1:8443/acme/widgets.git")).toEqual({ host: "127.0.0.1:8443", path: "acme/widgets" });
    for (const bad of ["file:///srv/repo", "/srv/repo.git", "https://h/only-one", "ext::sh -c x"]) expect(forgeRepo(bad)).toBeUndefined();
  });
});

describe("never-reflected through the bridge: the host's token cut across output reads comes back redacted", () => {
  for (const stream of ["err", "out"] as const) {
    test(`gh's ${stream === "err" ? "stderr" : "stdout"} in pieces cut at every offset of the token: never shown, whole or in part`, async () => {
      const token = "ghp_hostTokenValue123456";
      const failed: string[] = [];
      const { exec, call } = setup();
      for (let cut = 1; cut < token.length; cut++) {
        exec.expect((a) => a[0] === "gh", (_a, opts) => {
          const pieces = [`remote says ${token.slice(0, cut)}`, `${token.slice(cut)} (done)\n`];
          if (stream === "err") for (const p of pieces) opts.onStderr!(p);
          else for (const p of pieces) opts.onStdout?.(p);
          return { stdout: stream === "out" && !opts.onStdout ? pieces.join("") : "" };
        });
        const frames = await call(["pr", "view", "7"]);
        const text = frames.filter((f) => f.t === stream).map((f) => f.d).join("");
        if (text !== "remote says [REDACTED] (done)\n") failed.push(`${cut}: ${JSON.stringify(text)}`);
      }
      expect(failed).toEqual([]);
    });
  }
});
