// An agent's ordinary git and gh work in a fresh Docker sandbox, end to end, with the real git and the real gh on the
// host behind the bridge: commit (no identity set inside), push to a remote that is not origin, `gh repo view`,
// `gh pr create`, `gh pr list --json … --jq …`. The forge double is one HTTPS server on 127.0.0.1 (its own CA, which
// only the daemon's SSL_CERT_FILE trusts): git smart HTTP that demands the token, and a GitHub API double for gh.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { makeSiteCert } from "../../../src/demo/cert";
import { createExec } from "../../../src/sys/exec";
import type { Fixture } from "../docker/fixture";
import { fakeGitHub, type FakeGitHub } from "../../support/fake-github";
import { startGitHttpServer, type GitHttpServer } from "../../support/git-http-server";
import { acquireFixture, canRun, done, makeRepo, must, releaseFixture, removeRepoImages, skipReason, stopDaemon } from "./harness";

const hasGh = Bun.which("gh") !== null;
const tag = Math.random().toString(36).slice(2, 8);
const TOKEN = `sbxagenttoken${tag}${"z".repeat(20)}`;

let f: Fixture;
let repo: string;
let root = "";
let forge: GitHttpServer;
let api: FakeGitHub;
let env: Record<string, string>;

/** sbx as the test user, async: the forge runs in this process and must keep answering. */
function run(script: string) {
  return done(f.spawnSbx(["run", "s", "--", "sh", "-c", script], { cwd: repo, env }));
}

describe.skipIf(!canRun || !hasGh)(`an agent session on Docker${!canRun ? ` (skipped: ${skipReason})` : !hasGh ? " (skipped: no gh on this host)" : ""}`, () => {
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `agent-${tag}`);
    root = mkdtempSync("/tmp/sbxt-forge-");
    const cert = await makeSiteCert(createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }), root, ["127.0.0.1"]);
    // The daemon runs as the test user: it must read the CA file.
    chmodSync(root, 0o755);
    chmodSync(cert.certFile, 0o644);
    api = fakeGitHub(TOKEN);
    forge = startGitHttpServer(root, TOKEN, { cert: cert.certPem, key: cert.keyPem }, (req, url) => api.handle(req, url));
    await forge.createRepo("acme/widgets");
    await forge.createRepo("agent/widgets");
    const port = new URL(forge.url).port;
    // The daemon (the bridge's git and gh) trusts the forge's CA through its own environment, as on a host with a
    // private CA; the token is the one for that host.
    await stopDaemon(f.user);
    env = { SSL_CERT_FILE: cert.certFile };
    must(f.sbx(["secret", "set", `GIT_TOKEN_127_0_0_1_${port}`], { cwd: repo, env, stdin: TOKEN }), "sbx secret set");
    must(f.git(["config", "user.name", "Ann Host"], repo), "git config user.name");
    must(f.git(["config", "user.email", "ann@example.invalid"], repo), "git config user.email");
    must(f.git(["remote", "add", "origin", forge.repoUrl("acme/widgets")], repo), "git remote add origin");
    must(f.git(["remote", "add", "fork", forge.repoUrl("agent/widgets")], repo), "git remote add fork");
    for (const name of ["acme/widgets", "agent/widgets"]) {
      const url = forge.repoUrl(name).replace("https://", `https://x:${TOKEN}@`);
      must(await done(f.user.spawn(["git", "-c", `http.sslCAInfo=${cert.certFile}`, "push", "-q", url, "main"], { cwd: repo })), `host push ${name}`);
    }
    must(f.sbx(["create", "s"], { cwd: repo, env }), "sbx create s");
  }, 300_000);

  afterAll(async () => {
    if (repo) {
      f.sbx(["rm", "--force", "s"], { cwd: repo, env });
      removeRepoImages(repo);
      f.sbx(["secret", "rm", `GIT_TOKEN_127_0_0_1_${new URL(forge.url).port}`], { cwd: repo, env });
    }
    await forge?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
    if (f) await stopDaemon(f.user);
    if (f) releaseFixture();
  }, 120_000);

  test("a commit in a fresh sandbox works with no identity set inside: the host's, given at create", async () => {
    const r = await run("git checkout -q -b sbx/s/feat && echo hi > hi.txt && git add hi.txt && git commit -qm 'agent: hi' && git log -1 --format='%an <%ae>'");
    expect({ code: r.code, out: r.stdout.trim().split("\n").at(-1), err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, out: "Ann Host <ann@example.invalid>", err: "" });
  }, 60_000);

  test("a push to a remote that is not origin goes through the bridge with the token", async () => {
    const r = await run("git push -u fork sbx/s/feat 2>&1");
    expect({ code: r.code, out: r.code === 0 ? "" : r.stdout + r.stderr }).toEqual({ code: 0, out: "" });
    const sha = (await run("git rev-parse HEAD")).stdout.trim();
    const upstream = Bun.spawnSync(["git", "--git-dir", `${root}/agent/widgets.git`, "rev-parse", "refs/heads/sbx/s/feat"]).stdout.toString().trim();
    expect(upstream).toBe(sha);
    expect(forge.requests.some((q) => q.authorized && q.method === "POST" && q.path.startsWith("/agent/widgets.git/git-receive-pack"))).toBe(true);
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
  }, 60_000);

  test("gh repo view, gh pr create and gh pr list --json --jq work as on the host, with the token and without showing it", async () => {
    const view = await run("gh repo view --json nameWithOwner --jq .nameWithOwner");
    expect({ code: view.code, out: view.stdout, err: view.code === 0 ? "" : view.stderr }).toEqual({ code: 0, out: "acme/widgets\n", err: "" });
    const pr = await run("gh pr create --title 'Add hi' --body 'from the sandbox' --head sbx/s/feat --base main");
    expect({ code: pr.code, err: pr.code === 0 ? "" : pr.stderr }).toEqual({ code: 0, err: "" });
    expect(pr.stdout).toContain("https://example.invalid/pull/100");
    expect(api.prs.map((p) => [p.title, p.headRefName, p.baseRefName])).toEqual([["Add hi", "sbx/s/feat", "main"]]);
    const list = await run(`gh pr list --json number,headRefName --jq '.[] | select(.headRefName | startswith("sbx/")) | .number'`);
    expect({ code: list.code, out: list.stdout }).toEqual({ code: 0, out: "100\n" });
    // Every API request carried the host's token; nothing the sandbox saw did.
    expect(api.requests.length).toBeGreaterThan(3);
    expect(api.requests.every((q) => q.authorization === `token ${TOKEN}`)).toBe(true);
    for (const r of [view, pr, list]) expect(r.stdout + r.stderr).not.toContain(TOKEN);
    const leak = await run("gh pr list --json number --jq '$ENV | tostring'; gh auth status 2>&1; env");
    expect(leak.stdout + leak.stderr).not.toContain(TOKEN);
  }, 120_000);
});
