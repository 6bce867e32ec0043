// Invariant no-secret-inside for `--backend user`: a push from the guest through ~/bin/git (shim) and its bridge socket reaches a token-demanding upstream; the token is nowhere the guest can see.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Sandbox } from "../../../src/core/schemas";
import { secretsFile } from "../../../src/secrets/store";
import { startGitHttpServer, type GitHttpServer } from "../../support/git-http-server";
import { makeDaemonWorld, type DaemonWorld } from "./daemon-world";
import { makeWorld, must, sh, whyNot, type World } from "./harness";

const skip = whyNot();
const tag = Math.random().toString(36).slice(2, 8);
const TOKEN = `sbxusertoken${tag}${"q".repeat(20)}`;
const ID = "-c user.email=agent@example.invalid -c user.name=agent";

describe.skipIf(skip !== undefined)(`no-secret-inside (--backend user): push through shim and bridge${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let d: DaemonWorld;
  let sb: Sandbox;
  let upstream: GitHttpServer;
  let upstreamRoot = "";
  let ws = "";

  const asHost = (argv: string[]) => must(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--init-groups", "--reset-env", "--", ...argv]);

  beforeAll(async () => {
    w = await makeWorld();
    upstreamRoot = mkdtempSync("/tmp/sbxu-upstream-");
    upstream = startGitHttpServer(upstreamRoot, TOKEN);
    await upstream.createRepo("proj");
    // The host repo's origin is the upstream (no credentials in the URL); the host pushes main with the token once.
    asHost(["git", "-C", w.repo, "remote", "add", "origin", upstream.repoUrl("proj")]);
    const pushed = Bun.spawn(
      ["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--init-groups", "--reset-env", "--", "git", "-C", w.repo, "push", "-q", upstream.repoUrl("proj").replace("http://", `http://x:${TOKEN}@`), "main"],
      { stdout: "ignore", stderr: "pipe" },
    );
    expect(await pushed.exited).toBe(0);
    d = await makeDaemonWorld(w);
    // The host's secret, where `sbx secret set GIT_TOKEN` puts it (root's config dir, 0600): the bridge reads it per request.
    writeFileSync(secretsFile(d.paths.configDir), JSON.stringify({ GIT_TOKEN: TOKEN }), { mode: 0o600 });
    sb = (await d.users.create({ name: "creds", cwd: w.repo })).sandbox;
    ws = d.backend.workspace(d.spec(sb));
  }, 120_000);

  afterAll(async () => {
    if (sb) await d.users.rm("creds", { cwd: w.repo, force: true }).catch((e) => console.error(e));
    await upstream?.stop();
    if (upstreamRoot) rmSync(upstreamRoot, { recursive: true, force: true });
    await d?.close();
    await w?.teardown();
  }, 60_000);

  test("the guest's login shell finds the git shim first, and the bridge socket is its own to use", async () => {
    const r = await d.asGuest(sb, 'command -v git; echo "$SBX_BRIDGE_SOCKET"; test -w "$SBX_BRIDGE_SOCKET" && echo writable; ls "$(dirname "$SBX_BRIDGE_SOCKET")" || echo nolist');
    expect(r.out.split("\n")[0]).toBe(`${d.backend.home(d.backend.guest(d.spec(sb)))}/bin/git`);
    expect(r.out).toContain(d.spec(sb).sockets.bridge);
    expect(r.out).toContain("writable");
    expect(r.out).toContain("nolist"); // traverse only: the dir cannot be listed
    // the proxy socket is root's: the guest reaches the proxy only through its loopback port
    expect((await d.asGuest(sb, `test -w ${d.spec(sb).sockets.proxy} && echo writable`)).out).not.toContain("writable");
  });

  test("git push origin feature from the guest reaches the upstream with the host's token; the token is in no env, file or argv the guest sees", async () => {
    must(["true"]);
    const commit = await d.asGuest(sb, `cd ${ws} && git checkout -q -b feature && echo inside > inside.txt && git add inside.txt && git ${ID} commit -qm inside && git rev-parse HEAD`);
    expect(commit.code).toBe(0);
    const sha = commit.out.trim().split("\n").at(-1)!;

    // Every process's argv the guest can see, sampled as the guest while the push runs (the bridge's git runs as root
    // on the host). Where the guest's /proc is its own (Linux ≥ 5.8) it sees none of root's processes at all; where it
    // is not, it sees them, and their argv must still not hold the token. The same, sampled as root: the host's view.
    const sampler = Bun.spawn(
      d.backend.shellArgv(d.spec(sb), { argv: ["timeout", "20", "sh", "-c", "while :; do cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '; echo; done"], cwd: w.repo, tty: false, env: {} }),
      { stdout: "pipe", stderr: "ignore" },
    );
    const sampled = new Response(sampler.stdout).text();
    await Bun.sleep(300);
    // Its own branch prefix (sbx/<name>/): no approval needed.
    const push = await d.asGuest(sb, `cd ${ws} && git push origin feature:sbx/creds/feature 2>&1`, 60);
    sampler.kill();
    const cmdlines = await sampled;

    if (push.code !== 0) console.error(push.out, push.err, d.logs.slice(-20).join(""));
    expect(push.code).toBe(0);
    expect(push.out).toContain("feature -> sbx/creds/feature");
    const upstreamSha = Bun.spawnSync(["git", "--git-dir", join(upstreamRoot, "proj.git"), "rev-parse", "refs/heads/sbx/creds/feature"]).stdout.toString().trim();
    expect(upstreamSha).toBe(sha);
    expect(upstream.requests.some((q) => q.authorized && q.method === "POST" && q.path.endsWith("git-receive-pack"))).toBe(true);
    expect(d.store.listAudit({ sandboxId: sb.id }).some((e) => e.action.startsWith("git.") && JSON.stringify(e.detail).includes("push"))).toBe(true);

    expect(cmdlines).toContain("while :"); // the sampler ran and saw (at least) its own processes
    if (!d.backend.privateProc) expect(cmdlines).toContain("git"); // with the machine's /proc, it saw the push's too
    else expect(cmdlines).not.toMatch(/receive-pack|index-pack/); // root's git is not listed for the guest at all
    expect(cmdlines).not.toContain(TOKEN);
    expect(push.out + push.err).not.toContain(TOKEN);
    const env = await d.asGuest(sb, "env");
    expect(env.out).toContain("SBX_BRIDGE_SOCKET=");
    expect(env.out).not.toContain(TOKEN);
    // Files the guest can read: its home and workspace, /tmp, the sbx root, the daemon's dirs (which it cannot open).
    const g = await d.asGuest(sb, `grep -r -l -s -F -e '${TOKEN}' ${d.backend.home(d.backend.guest(d.spec(sb)))} /tmp ${w.root} ${d.paths.configDir} ${d.paths.stateDir}; echo "rc=$?"`, 60);
    expect(g.out).not.toContain("/");
    expect(g.out).toMatch(/rc=[12]/);
    expect(sh(["grep", "-r", "-l", "-F", TOKEN, d.paths.configDir]).out).toContain("secrets.json"); // control: it is there, for root
  }, 120_000);

  test("ref sync: the push's branch is on the host as sandbox-creds/feature; a host branch shows up in the clone as host/<branch>, written by the guest", async () => {
    let hostSide = "";
    for (let i = 0; i < 50 && hostSide === ""; i++) {
      hostSide = sh(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--init-groups", "--reset-env", "--", "git", "-C", w.repo, "rev-parse", "-q", "--verify", "refs/remotes/sandbox-creds/feature"]).out.trim();
      if (hostSide === "") await Bun.sleep(100);
    }
    expect(hostSide).toMatch(/^[0-9a-f]{40}$/);
    // host objects fetched as the host user, never root
    expect(sh(["find", join(w.repo, ".git"), "-uid", "0"]).out.trim()).toBe("");
    asHost(["git", "-C", w.repo, "branch", `fromhost-${tag}`, "main"]);
    let inClone = "";
    for (let i = 0; i < 80 && inClone === ""; i++) {
      inClone = (await d.asGuest(sb, `git -C ${ws} rev-parse -q --verify refs/remotes/host/fromhost-${tag}`)).out.trim();
      if (inClone === "") await Bun.sleep(100);
    }
    if (inClone === "") console.error(JSON.stringify(d.store.listAudit({ sandboxId: sb.id }).filter((e) => e.action.startsWith("ref-sync")).slice(-6)), d.view(d.store.getSandbox(sb.id)!).guards);
    expect(inClone).toMatch(/^[0-9a-f]{40}$/);
    const owner = sh(["find", join(ws, ".git"), "-newer", join(ws, ".git", "HEAD"), "-not", "-user", d.backend.guest(d.spec(sb))]).out.trim();
    expect(owner).toBe("");
  }, 60_000);
});
