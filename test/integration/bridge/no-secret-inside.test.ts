// Invariant no-secret-inside: pushes and fetches through the shim and bridge work, and the host's token never reaches the sandbox.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commitOn, git, makeHarness, refIn, sh, SHIMS, type Harness } from "./harness";

let h: Harness;
beforeAll(async () => {
  h = await makeHarness();
});
afterAll(async () => {
  await h.stop();
});

/** Every process's argv on this machine, joined; used to prove the token is never on a command line. */
function allCmdlines(): string {
  let s = "";
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      s += readFileSync(`/proc/${pid}/cmdline`, "utf8") + "\n";
    } catch {}
  }
  return s;
}

describe("no-secret-inside", () => {
  test("a push through the shim reaches the token-demanding upstream; the token is in no output, env or argv", async () => {
    const sha = await commitOn(h.clone, "feature", { "a.txt": "one\n" });
    let sawToken = false;
    let polling = true;
    const poll = (async () => {
      while (polling) {
        if (allCmdlines().includes(h.token)) sawToken = true;
        await Bun.sleep(5);
      }
    })();
    const r = await h.shim(["push", "-u", "origin", "feature"]);
    polling = false;
    await poll;
    expect(r.code).toBe(0);
    expect(await refIn(h.upstreamRepo, "refs/heads/feature")).toBe(sha);
    expect(await git(h.clone, "rev-parse", "refs/remotes/origin/feature")).toBe(sha);
    expect(await git(h.clone, "config", "branch.feature.merge")).toBe("refs/heads/feature");
    expect(r.stderr).toContain("feature -> feature");
    expect(r.stdout + r.stderr).not.toContain(h.token);
    expect(JSON.stringify(h.sandboxEnv)).not.toContain(h.token);
    expect(sawToken).toBe(false);
    // The upstream saw the token: the bridge injected it.
    expect(h.upstream.requests.some((q) => q.authorized && q.method === "POST" && q.path.endsWith("git-receive-pack"))).toBe(true);
    expect(h.audit.at(-1)).toMatchObject({ tool: "git", decision: "allowed", exitCode: 0, args: ["push", "-u", "origin", "feature"] });
  });

  test("the token is not written anywhere in the clone", async () => {
    const r = await sh(["grep", "-r", "-l", "-F", h.token, h.clone]);
    expect(r.code).toBe(1);
  });

  test("a fetch and a pull through the shim bring the upstream's new commits", async () => {
    // Someone else pushes to the upstream.
    const other = join(h.root, "other");
    await git(h.root, "clone", "-q", h.upstream.repoUrl("proj").replace("http://", `http://x:${h.token}@`), other);
    await Bun.write(join(other, "b.txt"), "from elsewhere\n");
    await git(other, "add", "b.txt");
    await git(other, "commit", "-q", "-m", "upstream work");
    await git(other, "push", "-q", "origin", "main");
    const upstreamMain = await git(other, "rev-parse", "HEAD");

    const f = await h.shim(["fetch", "origin"]);
    expect(f.code).toBe(0);
    expect(await git(h.clone, "rev-parse", "refs/remotes/origin/main")).toBe(upstreamMain);
    expect(f.stderr).toContain("main -> origin/main");
    expect(f.stdout + f.stderr).not.toContain(h.token);

    await git(h.clone, "checkout", "-q", "main");
    await git(h.clone, "branch", "-q", "--set-upstream-to=origin/main");
    const p = await h.shim(["pull", "--ff-only"]);
    expect(p.code).toBe(0);
    expect(await git(h.clone, "rev-parse", "HEAD")).toBe(upstreamMain);
    expect(readFileSync(join(h.clone, "b.txt"), "utf8")).toBe("from elsewhere\n");
  });

  test("ls-remote through the shim lists the upstream's refs", async () => {
    const r = await h.shim(["ls-remote", "origin"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("refs/heads/feature");
    expect(r.stdout).not.toContain(h.token);
  });

  test("clone of a URL on the host remote's server goes through the bridge and gets the upstream's URL", async () => {
    const r = await h.shim(["clone", "-q", h.upstream.repoUrl("proj"), "sub/copy"]);
    expect(r.code).toBe(0);
    const copy = join(h.clone, "sub/copy");
    expect(await git(copy, "rev-parse", "refs/remotes/origin/feature")).toBe(await refIn(h.upstreamRepo, "refs/heads/feature"));
    expect(await git(copy, "remote", "get-url", "origin")).toBe(h.upstream.repoUrl("proj"));
    expect(r.stdout + r.stderr).not.toContain(h.token);
  });

  test("the token goes only to the host repo's own remotes: a clone or ls-remote of another repo on that server carries none", async () => {
    await h.upstream.createRepo("private-other");
    const before = h.upstream.requests.length;
    const clone = await h.shim(["clone", "-q", h.upstream.repoUrl("private-other"), "sub/other"]);
    const ls = await h.shim(["ls-remote", h.upstream.repoUrl("private-other")]);
    expect(clone.code).not.toBe(0);
    expect(ls.code).not.toBe(0);
    const seen = h.upstream.requests.slice(before).filter((q) => q.path.includes("private-other"));
    expect(seen.length).toBeGreaterThan(0); // it was asked, without the token
    expect(seen.some((q) => q.authorized)).toBe(false);
    // The same repository by its URL (".git" or not) is the host's own remote: it gets the token.
    const own = await h.shim(["ls-remote", h.upstream.repoUrl("proj").replace(/\.git$/, "")]);
    expect(own.code).toBe(0);
  });

  test("output from the remote that contains the token comes back redacted", async () => {
    const hook = join(h.upstreamRepo, "hooks", "pre-receive");
    writeFileSync(hook, `#!/bin/sh\necho "remote says ${h.token}" >&2\nexit 1\n`);
    chmodSync(hook, 0o755);
    try {
      await commitOn(h.clone, "leaky", { "c.txt": "c\n" });
      const r = await h.shim(["push", "origin", "leaky"]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("remote says [REDACTED]");
      expect(r.stdout + r.stderr).not.toContain(h.token);
    } finally {
      writeFileSync(hook, "#!/bin/sh\nexit 0\n");
    }
  });

  test("a commit with a key-shaped string is refused with its file and line, and never reaches the upstream", async () => {
    const key = "ghp_" + "Z9y8X7w6V5".repeat(4).slice(0, 36);
    await commitOn(h.clone, "oops", { "notes.txt": "fine\n", "config/app.env": `A=1\nGITHUB=${key}\n` });
    const r = await h.shim(["push", "origin", "oops"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("config/app.env:2: GitHub token");
    expect(r.stderr).not.toContain(key);
    expect(await refIn(h.upstreamRepo, "refs/heads/oops")).toBe("");
    expect(h.audit.at(-1)).toMatchObject({ decision: "refused" });
  });

  /** receive-pack POSTs the upstream has seen: a refused push must add none. */
  const receivePosts = () => h.upstream.requests.filter((q) => q.method === "POST" && q.path.endsWith("git-receive-pack")).length;
  const keyOf = (seed: string) => "ghp_" + seed.repeat(10).slice(0, 36);

  test("a refused push never sends anything to the upstream's receive-pack (the push is held before it packs)", async () => {
    const posts = receivePosts();
    await git(h.clone, "checkout", "-q", "main");
    await commitOn(h.clone, "held", { "held.env": `T=${keyOf("Hk3d")}\n` });
    const r = await h.shim(["push", "origin", "held"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("held.env:1: GitHub token");
    // git's own "failed to push" lines of the aborted push are not shown; the refusal is.
    expect(r.stderr).not.toContain("failed to push");
    expect(receivePosts()).toBe(posts);
    // --no-verify skips hooks in git; the sandbox's copy of it never reaches the gate's push.
    const nv = await h.shim(["push", "--no-verify", "origin", "held"]);
    expect(nv.code).toBe(77);
    expect(receivePosts()).toBe(posts);
    expect(await refIn(h.upstreamRepo, "refs/heads/held")).toBe("");
  });

  test("a commit that ref sync already copied to the host (refs/remotes/sandbox-*) is still scanned", async () => {
    await git(h.clone, "checkout", "-q", "main");
    const sha = await commitOn(h.clone, "synced", { "s.env": `K=${keyOf("Sy9q")}\n` });
    // What the ref-sync watcher does: fetch the clone's branches into the host repo.
    await git(h.host, "fetch", "-q", h.clone, "+refs/heads/*:refs/remotes/sandbox-demo/*");
    expect(await git(h.host, "rev-parse", "refs/remotes/sandbox-demo/synced")).toBe(sha);
    const r = await h.shim(["push", "origin", "synced"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("s.env:1: GitHub token");
    expect(await refIn(h.upstreamRepo, "refs/heads/synced")).toBe("");
  });

  test("a secret that only a merge commit adds (in neither parent) is refused", async () => {
    await git(h.clone, "checkout", "-q", "main");
    await commitOn(h.clone, "side", { "side.txt": "side\n" });
    await git(h.clone, "checkout", "-q", "main");
    await commitOn(h.clone, "merged", { "m.txt": "m\n" });
    await git(h.clone, "merge", "-q", "--no-commit", "side");
    writeFileSync(join(h.clone, "evil.env"), `K=${keyOf("Mg7r")}\n`);
    await git(h.clone, "add", "evil.env");
    await git(h.clone, "commit", "-q", "-m", "merge side");
    const r = await h.shim(["push", "origin", "merged"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("evil.env:1: GitHub token");
    expect(await refIn(h.upstreamRepo, "refs/heads/merged")).toBe("");
  });

  test("a secret in a file git calls binary (a NUL byte) is refused, in a commit and in a merge", async () => {
    await git(h.clone, "checkout", "-q", "main");
    await commitOn(h.clone, "bin", { "blob.dat": `\0\0K=${keyOf("Bn4x")}\n` });
    const r = await h.shim(["push", "origin", "bin"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("blob.dat:1: GitHub token");
    expect(await refIn(h.upstreamRepo, "refs/heads/bin")).toBe("");
    // A merge resolving a binary file to new content: combined diffs never show binary text, so the gate reads the blob.
    await git(h.clone, "checkout", "-q", "main");
    await commitOn(h.clone, "bside", { "x.dat": "\0one\n" });
    await git(h.clone, "checkout", "-q", "main");
    await commitOn(h.clone, "bmain", { "x.dat": "\0two\n" });
    await sh(["git", "merge", "-q", "--no-commit", "bside"], { cwd: h.clone });
    writeFileSync(join(h.clone, "x.dat"), `\0\0three\nK=${keyOf("Bm2z")}\n`);
    await git(h.clone, "add", "x.dat");
    await git(h.clone, "commit", "-q", "-m", "merge binary");
    const m = await h.shim(["push", "origin", "bmain"]);
    expect(m.code).toBe(77);
    expect(m.stderr).toContain("x.dat:2: GitHub token");
    expect(await refIn(h.upstreamRepo, "refs/heads/bmain")).toBe("");
  });

  test("a secret only in a commit message is refused, naming the commit and 'commit message'; the upstream is unchanged", async () => {
    await git(h.clone, "checkout", "-q", "main");
    const before = await refIn(h.upstreamRepo, "refs/heads/msg");
    const posts = receivePosts();
    await commitOn(h.clone, "msg", { "plain.txt": "nothing here\n" }, "first, clean");
    const sha = await commitOn(h.clone, "msg", { "plain2.txt": "nothing here either\n" }, `deploy fix\n\nused ${keyOf("Cm8s")} to test`);
    await commitOn(h.clone, "msg", { "plain3.txt": "and here\n" }, "after, clean");
    const r = await h.shim(["push", "origin", "msg"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain(`commit message:3: GitHub token (commit ${sha.slice(0, 12)})`);
    expect(r.stderr).not.toContain(keyOf("Cm8s"));
    expect(await refIn(h.upstreamRepo, "refs/heads/msg")).toBe(before);
    expect(receivePosts()).toBe(posts);
    // Author and committer are the sandbox's text as well, and a forge shows them to everyone: a key-shaped author is
    // refused too (as 'commit header').
    await git(h.clone, "checkout", "-q", "main");
    await git(h.clone, "checkout", "-q", "-B", "who");
    const odd = keyOf("Au7h");
    await sh(["git", "commit", "-q", "--allow-empty", "-m", "empty, by an odd name"], { cwd: h.clone, env: { GIT_AUTHOR_NAME: odd, GIT_AUTHOR_EMAIL: `${odd}@example.invalid`, GIT_COMMITTER_NAME: odd } });
    const who = await h.shim(["push", "origin", "who"]);
    expect(who.code).toBe(77);
    expect(who.stderr).toContain("commit header: GitHub token");
    expect(who.stderr).not.toContain(odd);
    expect(await refIn(h.upstreamRepo, "refs/heads/who")).toBe("");
  });

  test("a commit whose message hides a secret after a NUL byte (where git log stops reading) is refused; the upstream is unchanged", async () => {
    await git(h.clone, "checkout", "-q", "main");
    const parent = await git(h.clone, "rev-parse", "HEAD");
    const tree = await git(h.clone, "rev-parse", "HEAD^{tree}");
    const raw = `tree ${tree}\nparent ${parent}\nauthor a <a@example.invalid> 1 +0000\ncommitter a <a@example.invalid> 1 +0000\n\nlooks clean\0${keyOf("Nu1l")}\n`;
    writeFileSync(join(h.root, "nul-commit"), raw);
    const sha = await git(h.clone, "hash-object", "-t", "commit", "-w", "--literally", join(h.root, "nul-commit"));
    await git(h.clone, "update-ref", "refs/heads/nul", sha);
    const posts = receivePosts();
    const r = await h.shim(["push", "origin", "nul"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("nulInCommit");
    expect(r.stderr).not.toContain(keyOf("Nu1l"));
    expect(await refIn(h.upstreamRepo, "refs/heads/nul")).toBe("");
    expect(receivePosts()).toBe(posts);
  });

  test("a secret only in an annotated tag's message is refused as 'tag message'; a clean annotated tag goes out", async () => {
    await git(h.clone, "checkout", "-q", "main");
    const target = await commitOn(h.clone, "tagged", { "t.txt": "release\n" }, "release commit");
    await git(h.clone, "tag", "-a", "v1-bad", "-m", `Release\n\ntoken ${keyOf("Tg3v")}`, target);
    const tagObj = await git(h.clone, "rev-parse", "refs/tags/v1-bad");
    const posts = receivePosts();
    const r = await h.shim(["push", "origin", "v1-bad"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain(`tag message:3: GitHub token (tag object ${tagObj.slice(0, 12)})`);
    expect(r.stderr).not.toContain(keyOf("Tg3v"));
    expect(await refIn(h.upstreamRepo, "refs/tags/v1-bad")).toBe("");
    expect((await sh(["git", "--git-dir", h.upstreamRepo, "cat-file", "-e", target])).code).not.toBe(0);
    expect(receivePosts()).toBe(posts);
    // A tag of that tag: the inner message is still read.
    await git(h.clone, "tag", "-a", "v1-outer", "-m", "outer, clean", "v1-bad");
    const outer = await h.shim(["push", "origin", "v1-outer"]);
    expect(outer.code).toBe(77);
    expect(outer.stderr).toContain(`tag message:3: GitHub token (tag object ${tagObj.slice(0, 12)})`);
    expect(await refIn(h.upstreamRepo, "refs/tags/v1-outer")).toBe("");
    // The same commit under a clean annotated tag is pushed, tag object and all.
    await git(h.clone, "tag", "-a", "v1-good", "-m", "Release 1", target);
    const good = await h.shim(["push", "origin", "v1-good"]);
    expect(good.stderr).toContain("[new tag]         v1-good -> v1-good");
    expect(good.code).toBe(0);
    expect(await refIn(h.upstreamRepo, "refs/tags/v1-good")).toBe(await git(h.clone, "rev-parse", "refs/tags/v1-good"));
  });

  test("with the gate's pre-push hook deleted or replaced, a push is still scanned and held", async () => {
    const hook = join(h.root, "gate", "hooks", "pre-push");
    rmSync(hook, { force: true });
    await git(h.clone, "checkout", "-q", "main");
    await commitOn(h.clone, "nohook", { "n.env": `K=${keyOf("Nh5w")}\n` });
    const posts = receivePosts();
    const r = await h.shim(["push", "origin", "nohook"]);
    expect(r.code).toBe(77);
    expect(receivePosts()).toBe(posts);
    writeFileSync(hook, "#!/bin/sh\nexit 0\n");
    chmodSync(hook, 0o755);
    const again = await h.shim(["push", "origin", "nohook"]);
    expect(again.code).toBe(77);
    expect(receivePosts()).toBe(posts);
    expect(await refIn(h.upstreamRepo, "refs/heads/nohook")).toBe("");
    // And a clean push goes through after that.
    await git(h.clone, "checkout", "-q", "main");
    const sha = await commitOn(h.clone, "clean-after", { "ok.txt": "ok\n" });
    const ok = await h.shim(["push", "origin", "clean-after"]);
    expect(ok.code).toBe(0);
    expect(ok.stderr).toContain("clean-after -> clean-after");
    expect(await refIn(h.upstreamRepo, "refs/heads/clean-after")).toBe(sha);
  });

  test("a refused invocation says why and exits 77", async () => {
    const r = await h.shim(["-c", "core.sshCommand=touch /tmp/x", "push", "origin", "feature"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("refused");
    expect(r.stderr).toContain("-c");
  });

  test("local git commands run locally without the bridge", async () => {
    const r = await h.shim(["status", "--short"], { env: { SBX_BRIDGE_SOCKET: join(h.root, "nope.sock") } });
    expect(r.code).toBe(0);
  });

  test("with the bridge down the shim says so and exits non-zero", async () => {
    const r = await h.shim(["push", "origin", "feature"], { env: { SBX_BRIDGE_SOCKET: join(h.root, "nope.sock") } });
    expect(r.code).toBe(69);
    expect(r.stderr).toContain("command bridge is not answering");
  });

  test("gh with the bridge down says so too", async () => {
    const r = await sh([join(SHIMS, "gh"), "pr", "list"], { cwd: h.clone, env: { ...h.sandboxEnv, SBX_BRIDGE_SOCKET: join(h.root, "nope.sock") } });
    expect(r.code).toBe(69);
    expect(r.stderr).toContain("command bridge is not answering");
  });

  test("the socket is private to its owner", async () => {
    const { statSync } = await import("node:fs");
    expect(statSync(h.socket).mode & 0o777).toBe(0o600);
    expect(statSync(join(h.socket, "..")).mode & 0o777).toBe(0o700);
  });
});
