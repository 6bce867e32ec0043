// Invariants no-secret-inside and host-runs-no-guest-config, end to end: a push from inside a real sandbox through shim, bridge and daemon to a token-demanding upstream; the LLM key proxy.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { basename } from "node:path";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { startFakeLlm, type FakeLlm } from "../../support/fake-llm";
import { startGitHttpServer, type GitHttpServer } from "../../support/git-http-server";
import { acquireFixture, canRun, containerOf, dexec, docker, done, makeRepo, must, releaseFixture, removeRepoImages, skipReason, stopDaemon } from "./harness";

const tag = Math.random().toString(36).slice(2, 8);
const TOKEN = `sbxtesttoken${tag}${"q".repeat(20)}`;
const LLM_KEY = `sk-ant-api03-sbxtest${tag}${"k".repeat(24)}`;

let f: Fixture;
let repo: string;
let ctr = "";
let upstream: GitHttpServer;
let upstreamRoot = "";
let llm: FakeLlm;
let env: Record<string, string>;

function sbx(args: string[], stdin?: string) {
  return f.sbx(args, { cwd: repo, env, ...(stdin !== undefined ? { stdin } : {}) });
}

/** sbx as the test user, async: the upstream and the fake LLM run in this process and must keep answering. */
function sbxAsync(args: string[]) {
  return done(f.spawnSbx(args, { cwd: repo, env }));
}

const GIT_ID = ["-c", "user.email=agent@example.invalid", "-c", "user.name=agent"];

describe.skipIf(!canRun)(`credentials end to end on Docker${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `creds-${tag}`);
    upstreamRoot = mkdtempSync("/tmp/sbxt-upstream-");
    upstream = startGitHttpServer(upstreamRoot, TOKEN);
    await upstream.createRepo("proj");
    llm = await startFakeLlm();
    // The daemon reads the LLM upstream seam from its own environment: restart the test user's daemon with it.
    await stopDaemon(f.user);
    env = { SBX_TEST_ONLY_LLM_UPSTREAMS: JSON.stringify({ anthropic: llm.url }) };
    must(sbx(["secret", "set", "GIT_TOKEN"], TOKEN), "sbx secret set GIT_TOKEN");
    must(sbx(["secret", "set", "ANTHROPIC_API_KEY"], LLM_KEY), "sbx secret set ANTHROPIC_API_KEY");
    // The host repo's origin is the upstream (no credentials in the URL); the host pushes main with the token.
    must(f.git(["remote", "add", "origin", upstream.repoUrl("proj")], repo), "git remote add");
    must(await done(f.user.spawn(["git", "push", "-q", upstream.repoUrl("proj").replace("http://", `http://x:${TOKEN}@`), "main"], { cwd: repo })), "host push main");
    must(sbx(["create", "c"]), "sbx create c");
    // These tests push branches by their plain names (feature, leak, …): the branch prefix has its own tests
    // (test/integration/bridge/push-prefix.test.ts, and the demo's push to sbx/demo/…).
    must(sbx(["bridge", "c", "--allow", "push-anywhere"]), "sbx bridge c --allow push-anywhere");
    ctr = containerOf(realpathSync(repo), "c");
  }, 180_000);

  afterAll(async () => {
    if (repo) {
      sbx(["rm", "--force", "c"]);
      const left = docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${realpathSync(repo)}`]).stdout.split("\n").filter(Boolean);
      if (left.length) docker(["rm", "--force", ...left]);
      removeRepoImages(repo);
      sbx(["secret", "rm", "GIT_TOKEN"]);
      sbx(["secret", "rm", "ANTHROPIC_API_KEY"]);
    }
    await upstream?.stop();
    await llm?.stop();
    if (upstreamRoot) rmSync(upstreamRoot, { recursive: true, force: true });
    // The next file gets a daemon without the test seam.
    if (f) await stopDaemon(f.user);
    if (f) releaseFixture();
  }, 60_000);

  test("git push origin <branch> from inside goes through shim and bridge; the token is in no env, file, argv or output", async () => {
    must(dexec(f, ctr, ["sh", "-c", `git checkout -q -b feature && echo inside > inside.txt && git add inside.txt && git ${GIT_ID.join(" ")} commit -qm inside`], { workdir: repo }), "commit inside");
    const sha = must(dexec(f, ctr, ["git", "rev-parse", "HEAD"], { workdir: repo }), "rev-parse").stdout.trim();

    // Every process's argv inside the container, sampled while the push runs.
    const watcher = Bun.spawn(
      ["docker", "exec", "--user", `${f.user.uid}:${f.user.gid}`, ctr, "sh", "-c", "while :; do cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '; echo; done"],
      { stdout: "pipe", stderr: "ignore" },
    );
    const out = new Response(watcher.stdout).text();
    await Bun.sleep(300);
    const push = await sbxAsync(["run", "c", "--", "git", "push", "origin", "feature"]);
    watcher.kill();
    const cmdlines = await out;

    expect(push.code).toBe(0);
    expect(push.stderr + push.stdout).toContain("feature -> feature");
    // It reached the upstream, which demanded the token: the bridge injected it on the host.
    const upstreamSha = Bun.spawnSync(["git", "--git-dir", join(upstreamRoot, "proj.git"), "rev-parse", "refs/heads/feature"]).stdout.toString().trim();
    expect(upstreamSha).toBe(sha);
    expect(upstream.requests.some((q) => q.authorized && q.method === "POST" && q.path.endsWith("git-receive-pack"))).toBe(true);

    expect(cmdlines.length).toBeGreaterThan(0);
    expect(cmdlines).toContain("git"); // the sampler saw the push's processes
    expect(cmdlines).not.toContain(TOKEN);
    expect(push.stdout + push.stderr).not.toContain(TOKEN);
    const e = must(docker(["exec", ctr, "env"]), "docker exec env");
    expect(e.stdout).toContain("SBX_BRIDGE_SOCKET=/run/sbx/bridge.sock");
    expect(e.stdout).not.toContain(TOKEN);
    expect(e.stdout).not.toContain(LLM_KEY);
    const inspect = docker(["inspect", ctr]).stdout;
    expect(inspect).not.toContain(TOKEN);
    expect(inspect).not.toContain(LLM_KEY);
    for (const dir of [f.user.home, repo]) {
      const g = dexec(f, ctr, ["grep", "-r", "-l", "-s", "-F", "-e", TOKEN, "-e", LLM_KEY, dir]);
      expect(g.code).toBe(1); // 1: no match (2 would be an error)
    }
  }, 120_000);

  test("login shells keep the shims first: bash -l and fish -l find the git shim, and git push from bash -l goes through the bridge", async () => {
    // Debian's /etc/profile sets PATH from scratch; sbx's read-only /etc/profile.d snippet puts the shims back first.
    const bash = await sbxAsync(["run", "c", "--", "bash", "-l", "-c", "command -v git"]);
    expect(bash.stdout.trim()).toBe("/opt/sbx/shims/git");
    const fish = await sbxAsync(["run", "c", "--", "fish", "-l", "-c", "command -v git"]);
    expect(fish.stdout.trim()).toBe("/opt/sbx/shims/git");
    // The snippets are sbx's, read-only: the sandbox cannot change them.
    const w = dexec(f, ctr, ["sh", "-c", "echo 'PATH=/usr/bin' >> /etc/profile.d/zz-sbx-shims.sh"]);
    expect(w.code).not.toBe(0);

    must(dexec(f, ctr, ["sh", "-c", `git checkout -q -b login main && echo login > login.txt && git add login.txt && git ${GIT_ID.join(" ")} commit -qm login`], { workdir: repo }), "commit inside");
    const sha = must(dexec(f, ctr, ["git", "rev-parse", "HEAD"], { workdir: repo }), "rev-parse").stdout.trim();
    const before = upstream.requests.length;
    const push = await sbxAsync(["run", "c", "--", "bash", "-l", "-c", "git push origin login"]);
    expect(push.code).toBe(0);
    const upstreamSha = Bun.spawnSync(["git", "--git-dir", join(upstreamRoot, "proj.git"), "rev-parse", "refs/heads/login"]).stdout.toString().trim();
    expect(upstreamSha).toBe(sha);
    // Only the bridge holds the token: an authorized receive-pack means the push went through it.
    expect(upstream.requests.slice(before).some((q) => q.authorized && q.method === "POST" && q.path.endsWith("git-receive-pack"))).toBe(true);
    expect(push.stdout + push.stderr).not.toContain(TOKEN);
  }, 120_000);

  test("a commit holding a key-shaped string is refused by the push gate and never reaches the upstream", async () => {
    const key = `AKIA${"Z".repeat(12)}${tag.toUpperCase().replace(/[^A-Z0-9]/g, "Q").padEnd(4, "Q").slice(0, 4)}`;
    must(dexec(f, ctr, ["sh", "-c", `git checkout -q -b leak && echo "aws_key = ${key}" > config.txt && git add config.txt && git ${GIT_ID.join(" ")} commit -qm leak`], { workdir: repo }), "commit leak");
    const push = await sbxAsync(["run", "c", "--", "git", "push", "origin", "leak"]);
    expect(push.code).not.toBe(0);
    expect(push.stderr + push.stdout).toMatch(/aws-access-key-id|secret/i);
    const r = Bun.spawnSync(["git", "--git-dir", join(upstreamRoot, "proj.git"), "rev-parse", "--verify", "-q", "refs/heads/leak"]);
    expect(r.exitCode).not.toBe(0);
  }, 120_000);

  test("LLM: a request to $ANTHROPIC_BASE_URL reaches the upstream with the host's key; the placeholder is never forwarded", async () => {
    const before = llm.requests.length;
    const r = await sbxAsync([
      "run", "c", "--", "sh", "-c",
      'curl -sS -m 10 -H "x-api-key: $ANTHROPIC_AUTH_TOKEN" -H "authorization: Bearer $ANTHROPIC_AUTH_TOKEN" -H "content-type: application/json" -d \'{"model":"m"}\' "$ANTHROPIC_BASE_URL/v1/messages"',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('"ok":true');
    const got = llm.requests.slice(before);
    expect(got.length).toBe(1);
    expect(got[0]!.path).toBe("/v1/messages");
    expect(got[0]!.headers["x-api-key"]).toBe(LLM_KEY);
    expect(JSON.stringify(got[0]!.headers)).not.toContain("sbx-placeholder");
    expect(r.stdout + r.stderr).not.toContain(LLM_KEY);
    // Inside, the key variable holds only the placeholder.
    expect(dexec(f, ctr, ["printenv", "ANTHROPIC_AUTH_TOKEN"]).stdout.trim()).toBe("sbx-placeholder");
  }, 60_000);

  test("host-runs-no-guest-config: a hook and fsmonitor planted in the clone's config never run on the host during push and sync", async () => {
    const marker = join(f.user.home, `pwned-${tag}`);
    const planted = `#!/bin/sh\ntouch ${marker}\n`;
    must(dexec(f, ctr, ["sh", "-c", `printf '%s' '${planted}' > .git/hooks/pre-push && chmod +x .git/hooks/pre-push && cp .git/hooks/pre-push .git/hooks/post-checkout && git config core.fsmonitor .git/hooks/pre-push && git config core.hooksPath .git/hooks`], { workdir: repo }), "plant");
    must(dexec(f, ctr, ["sh", "-c", `git -c core.fsmonitor=false -c core.hooksPath=/dev/null checkout -q -b hooked main && echo more >> hooked.txt && git add hooked.txt && git ${GIT_ID.join(" ")} -c core.fsmonitor=false -c core.hooksPath=/dev/null commit -qm more`], { workdir: repo }), "commit");
    const push = await sbxAsync(["run", "c", "--", "git", "push", "origin", "hooked"]);
    if (push.code !== 0) console.error(push.stderr);
    expect(push.code).toBe(0);
    // A host-side ref change (synced into the clone) and a clone-side one (synced to the host) both happen.
    must(f.git(["branch", "-f", `hostside-${tag}`, "main"], repo), "host branch");
    await Bun.sleep(1500);
    // The marker would exist on the host if any host git had run the clone's hook or fsmonitor (home is mounted inside
    // only through overlays, so a hook run inside the container cannot create it on the host either).
    expect(Bun.spawnSync(["test", "-e", marker]).exitCode).not.toBe(0);
    // Control: plain host git in the clone (what sbx must never do) does run the planted hook.
    const real = realpathSync(repo);
    const clone = join(f.user.home, ".cache", "sandbox", `${basename(real)}-${createHash("sha256").update(real).digest("hex")}`, "c", "clone");
    f.user.run(["git", "-C", clone, "checkout", "-q", "main"]);
    expect(Bun.spawnSync(["test", "-e", marker]).exitCode).toBe(0);
  }, 120_000);

  test("work the bridge pushed upstream is not unsynced (no host branch has it); a commit never pushed still is, and refuses rm", async () => {
    must(dexec(f, ctr, ["sh", "-c", `git checkout -q -b shipped main && echo a > shipped.txt && git add shipped.txt && git ${GIT_ID.join(" ")} commit -qm shipped`], { workdir: repo }), "commit shipped");
    const shipped = must(dexec(f, ctr, ["git", "rev-parse", "HEAD"], { workdir: repo }), "rev-parse").stdout.trim();
    must(await sbxAsync(["run", "c", "--", "git", "push", "origin", "shipped"]), "push shipped");
    must(dexec(f, ctr, ["sh", "-c", `git checkout -q -b kept main && echo b > kept.txt && git add kept.txt && git ${GIT_ID.join(" ")} commit -qm kept-only-here`], { workdir: repo }), "commit kept");
    const kept = must(dexec(f, ctr, ["git", "rev-parse", "HEAD"], { workdir: repo }), "rev-parse").stdout.trim();
    const list = JSON.parse(must(await sbxAsync(["list", "--json"]), "list").stdout) as { name: string; unsynced: { sha: string }[] | null }[];
    const unsynced = (list.find((i) => i.name === "c")?.unsynced ?? []).map((c) => c.sha);
    expect(unsynced).toContain(kept);
    expect(unsynced).not.toContain(shipped);
    // Pushed earlier in this file, also on no host branch: not counted either.
    expect(unsynced.some((sha) => sha === upstreamBranch("feature"))).toBe(false);
    const rm = await sbxAsync(["rm", "c"]);
    expect(rm.code).toBe(65);
    expect(rm.stderr).toContain(kept.slice(0, 12));
    expect(rm.stderr).not.toContain(shipped.slice(0, 12));
  }, 120_000);
});

function upstreamBranch(name: string): string {
  return Bun.spawnSync(["git", "--git-dir", join(upstreamRoot, "proj.git"), "rev-parse", `refs/heads/${name}`]).stdout.toString().trim();
}
