// Invariant host-runs-no-guest-config: hooks, fsmonitor, sshCommand, uploadpack, filters, alternates and URLs planted in the clone never act on the host.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { appendFileSync, chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commitOn, git, makeHarness, refIn, sh, type Harness } from "./harness";
import { startGitHttpServer } from "../../support/git-http-server";

let h: Harness;
beforeEach(async () => {
  h = await makeHarness();
});
afterEach(async () => {
  await h.stop();
});

/** A script that records each run outside the sandbox (the host) in a marker file; `body` follows. */
function plant(name: string, body = "exit 0"): { script: string; marker: string } {
  const marker = join(h.root, `marker-${name}`);
  const script = join(h.root, `plant-${name}.sh`);
  writeFileSync(script, `#!/bin/sh\n[ -n "$SBX_IN_SANDBOX" ] || echo "ran: $0 $*" >> '${marker}'\n${body}\n`);
  chmodSync(script, 0o755);
  return { script, marker };
}

/** git run in the clone by something other than the sandbox: what the host must never do. */
const outside = (...args: string[]) => sh(["git", ...args], { cwd: h.clone });

/** A push and a fetch through the shim, both of which must succeed. */
async function pushAndFetch(branch: string, files: Record<string, string> = { [`${branch}.txt`]: `${branch}\n` }): Promise<string> {
  const sha = await commitOn(h.clone, branch, files);
  const p = await h.shim(["push", "origin", branch]);
  expect(p.stderr).not.toContain("refused");
  expect(p.code).toBe(0);
  expect(await refIn(h.upstreamRepo, `refs/heads/${branch}`)).toBe(sha);
  const f = await h.shim(["fetch", "origin"]);
  expect(f.code).toBe(0);
  return sha;
}

const HOOKS = [
  "pre-push",
  "post-checkout",
  "reference-transaction",
  "pre-commit",
  "post-commit",
  "post-merge",
  "pre-receive",
  "update",
  "post-receive",
  "post-update",
  "push-to-checkout",
  "pre-auto-gc",
  "post-index-change",
  "fsmonitor-watchman",
];

describe("host-runs-no-guest-config", () => {
  test("hooks in the clone's .git/hooks never run on the host", async () => {
    const { script, marker } = plant("hooks");
    for (const hook of HOOKS) {
      writeFileSync(join(h.clone, ".git", "hooks", hook), `#!/bin/sh\nexec '${script}' ${hook} "$@"\n`);
      chmodSync(join(h.clone, ".git", "hooks", hook), 0o755);
    }
    await pushAndFetch("hooked");
    expect(existsSync(marker)).toBe(false);
    // Control: git run in the clone from outside the sandbox does run them.
    await outside("commit", "-q", "--allow-empty", "-m", "control");
    expect(existsSync(marker)).toBe(true);
  });

  test("a core.hooksPath set in the clone never runs on the host", async () => {
    const { script, marker } = plant("hookspath");
    const dir = join(h.root, "evil-hooks");
    mkdirSync(dir);
    for (const hook of HOOKS) {
      writeFileSync(join(dir, hook), `#!/bin/sh\nexec '${script}' ${hook}\n`);
      chmodSync(join(dir, hook), 0o755);
    }
    await git(h.clone, "config", "core.hooksPath", dir);
    await pushAndFetch("hookspath");
    expect(existsSync(marker)).toBe(false);
    await outside("commit", "-q", "--allow-empty", "-m", "control");
    expect(existsSync(marker)).toBe(true);
  });

  test("core.fsmonitor set in the clone never runs on the host", async () => {
    const { script, marker } = plant("fsmonitor");
    await git(h.clone, "config", "core.fsmonitor", script);
    await pushAndFetch("fsmon");
    expect(existsSync(marker)).toBe(false);
    await outside("status", "--short");
    expect(existsSync(marker)).toBe(true);
  });

  test("core.sshCommand set in the clone never runs on the host, even with an ssh origin URL", async () => {
    const { script, marker } = plant("ssh", "exit 1");
    await git(h.clone, "config", "core.sshCommand", script);
    await git(h.clone, "remote", "set-url", "origin", "ssh://git@127.0.0.1:1/proj.git");
    await pushAndFetch("sshcmd");
    expect(existsSync(marker)).toBe(false);
    await outside("ls-remote", "origin");
    expect(existsSync(marker)).toBe(true);
  });

  test("uploadpack settings in the clone (remote.*.uploadpack, uploadpack.packObjectsHook, receivepack) never run on the host", async () => {
    const { script, marker } = plant("uploadpack", "exit 1");
    await git(h.clone, "config", "remote.origin.uploadpack", script);
    await git(h.clone, "config", "remote.origin.receivepack", script);
    await git(h.clone, "config", "uploadpack.packObjectsHook", script);
    await git(h.clone, "remote", "add", "loc", h.host);
    await git(h.clone, "config", "remote.loc.uploadpack", script);
    await pushAndFetch("upack");
    expect(existsSync(marker)).toBe(false);
    await outside("fetch", "loc");
    expect(existsSync(marker)).toBe(true);
  });

  test("a filter or diff driver the clone defines never runs on the host", async () => {
    const { script, marker } = plant("filter", "cat");
    await git(h.clone, "config", "filter.evil.clean", script);
    await git(h.clone, "config", "filter.evil.smudge", script);
    await git(h.clone, "config", "diff.evil.textconv", script);
    await git(h.clone, "config", "diff.evil.command", script);
    await pushAndFetch("filtered", { ".gitattributes": "* filter=evil diff=evil\n", "data.txt": "content\n" });
    expect(existsSync(marker)).toBe(false);
    appendFileSync(join(h.clone, "data.txt"), "more\n");
    await outside("add", "data.txt");
    expect(existsSync(marker)).toBe(true);
  });

  test("an objects/info/alternates rewrite in the clone never lets the host read other repositories", async () => {
    // A private repo on the host that the sandbox must not be able to exfiltrate through a push.
    const secret = join(h.root, "private");
    mkdirSync(secret);
    await git(secret, "init", "-q", "-b", "main");
    await Bun.write(join(secret, "private.txt"), "host-only data\n");
    await git(secret, "add", "private.txt");
    await git(secret, "commit", "-q", "-m", "private");
    const stolen = await git(secret, "rev-parse", "HEAD");
    appendFileSync(join(h.clone, ".git", "objects", "info", "alternates"), join(secret, ".git", "objects") + "\n");
    // Control: anything reading the clone now sees the private commit.
    expect((await outside("cat-file", "-e", stolen)).code).toBe(0);
    // The sandbox asks the bridge directly to push that commit, sending no objects.
    const head = JSON.stringify({ tool: "git", args: ["push", "origin", `${stolen}:refs/heads/stolen`], cwd: h.clone, resolved: { [stolen]: { sha: stolen } } }) + "\n";
    const res = await fetch("http://bridge/v1/run", { method: "POST", body: head, unix: h.socket } as RequestInit);
    const frames = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as { t: string; code?: number; d?: string });
    expect(frames.at(-1)).toEqual({ t: "exit", code: 77 });
    expect(frames.map((f) => f.d ?? "").join("")).toContain(`this push needs object ${stolen}, which it did not send`);
    expect(await refIn(h.upstreamRepo, "refs/heads/stolen")).toBe("");
    expect((await sh(["git", "--git-dir", h.upstreamRepo, "cat-file", "-e", stolen])).code).not.toBe(0);
    // And an ordinary push still works with the planted alternates.
    await pushAndFetch("after-alternates");
  });

  test("a pack that leaves out the blobs its commits change is refused as incomplete, and nothing is pushed", async () => {
    const sha = await commitOn(h.clone, "blobless", { "b1.txt": "one\n", "b2.txt": "two\n" });
    const base = await git(h.clone, "rev-parse", "main");
    // Commits and trees only: the sandbox hopes the host fills in the rest.
    const objs = (await git(h.clone, "rev-list", "--objects", sha, `^${base}`)).split("\n").map((l) => l.split(" ")[0]!);
    const types = await sh(["git", "cat-file", "--batch-check=%(objectname) %(objecttype)"], { cwd: h.clone, stdin: objs.join("\n") + "\n" });
    const keep = types.stdout.trim().split("\n").filter((l) => !l.endsWith(" blob")).map((l) => l.split(" ")[0]);
    const p = Bun.spawn(["git", "pack-objects", "--stdout", "-q"], { cwd: h.clone, stdin: Buffer.from(keep.join("\n") + "\n"), stdout: "pipe" });
    const pack = new Uint8Array(await new Response(p.stdout).arrayBuffer());
    expect(await p.exited).toBe(0);
    const head = new TextEncoder().encode(JSON.stringify({ tool: "git", args: ["push", "origin", "blobless"], cwd: h.clone, resolved: { blobless: { sha, ref: "refs/heads/blobless" } } }) + "\n");
    const body = new Uint8Array(head.length + pack.length);
    body.set(head);
    body.set(pack, head.length);
    const res = await fetch("http://bridge/v1/run", { method: "POST", body, unix: h.socket } as RequestInit);
    const frames = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as { t: string; code?: number; d?: string });
    expect(frames.at(-1)).toEqual({ t: "exit", code: 77 });
    expect(frames.map((f) => f.d ?? "").join("")).toMatch(/this push needs object [0-9a-f]{40}, which it did not send/);
    expect(await refIn(h.upstreamRepo, "refs/heads/blobless")).toBe("");
  });

  test("a remote.origin.url (or pushurl) rewritten in the clone never redirects the host", async () => {
    const evil = startGitHttpServer(join(h.root, "evil-srv"), h.token);
    try {
      await evil.createRepo("evil");
      await git(h.clone, "remote", "set-url", "origin", evil.repoUrl("evil"));
      await git(h.clone, "config", "remote.origin.pushurl", evil.repoUrl("evil"));
      await pushAndFetch("redirected");
      expect(evil.requests).toHaveLength(0);
      expect(h.upstream.requests.some((q) => q.path.endsWith("git-receive-pack"))).toBe(true);
    } finally {
      await evil.stop();
    }
  });
});
