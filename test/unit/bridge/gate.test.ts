// The gate's git argv and environment (golden), and which token goes to which host.
import { describe, expect, test } from "bun:test";
import { closeSync, constants, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MissingObject, missingIn, trustedTips } from "../../../src/bridge/gate";
import { ALTERNATE_REFS, gateGit, gatePaths, gitEnv, sshSettingsOf, transportOf } from "../../../src/bridge/gate-git";
import { hookRefsReader, HOOK_REF, HOOK_REFS_END, PRE_PUSH_HOOK } from "../../../src/bridge/gate-hook";
import { credentialHost, tokenFor } from "../../../src/bridge/tokens";
import { FakeExec } from "../../fakes/exec";
import { githubRepo } from "../../../src/bridge/gh-run";
import { fastForwards, pushOutputRewriter } from "../../../src/bridge/push";

describe("gate git", () => {
  test("argv: only host-chosen config, the one transport, no credential helper", () => {
    expect(gateGit(["push", "https://github.com/o/r.git", "refs/heads/x:refs/heads/x"], { transport: "https" })).toEqual([
      "git",
      "-c", "core.hooksPath=/dev/null",
      "-c", "core.fsmonitor=false",
      "-c", "core.sshCommand=/bin/false",
      "-c", "protocol.allow=never",
      "-c", "protocol.https.allow=always",
      "-c", "http.followRedirects=false",
      "-c", "credential.helper=",
      "-c", "credential.useHttpPath=false",
      "-c", "transfer.fsckObjects=true",
      "-c", `core.alternateRefsCommand=${ALTERNATE_REFS}`,
      "push", "https://github.com/o/r.git", "refs/heads/x:refs/heads/x",
    ]);
  });
  test("the token is in the env of that one process, never in argv", () => {
    const argv = gateGit(["fetch"], { transport: "https" });
    const env = gitEnv({ path: "/usr/bin", home: "/h", token: { value: "SECRET-TOKEN-1", host: "github.com", scheme: "https" } });
    expect(argv.join(" ")).not.toContain("SECRET-TOKEN-1");
    expect(env).toEqual({
      PATH: "/usr/bin",
      HOME: "/h",
      XDG_CONFIG_HOME: "/h/.config",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      GIT_ASKPASS: "/bin/false",
      SSH_ASKPASS: "/bin/false",
      GIT_PROTOCOL_FROM_USER: "0",
      GIT_OPTIONAL_LOCKS: "0",
      LC_ALL: "C",
      GIT_CONFIG_COUNT: "1",
      GIT_CONFIG_KEY_0: "http.https://github.com/.extraHeader",
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${btoa("x-access-token:SECRET-TOKEN-1")}`,
    });
    expect(gitEnv({ path: "/usr/bin", home: "/h" }).GIT_CONFIG_COUNT).toBeUndefined();
  });
  // Asks git itself which header it would send to a URL, with the gate's environment for a token of https://github.com.
  test("credential-scope: git sends the token's header to its own scheme, host and port only", async () => {
    const env = gitEnv({ path: process.env.PATH ?? "/usr/bin:/bin", home: "/nonexistent", token: { value: "T0KEN-xyz-123", host: "github.com", scheme: "https" } });
    const header = async (url: string) => {
      const p = Bun.spawn(["git", "config", "--get-urlmatch", "http.extraHeader", url], { env, stdout: "pipe", stderr: "ignore" });
      return (await new Response(p.stdout).text()).trim();
    };
    const expected = `Authorization: Basic ${btoa("x-access-token:T0KEN-xyz-123")}`;
    expect(await header("https://github.com/o/r.git")).toBe(expected);
    expect(await header("https://someone@GitHub.com:443/o/r.git")).toBe(expected);
    for (const other of ["http://github.com/o/r.git", "https://github.com:8443/o/r.git", "https://evil.example/o/r.git", "https://github.com.evil.example/o/r.git", "https://evil.example/github.com/o/r.git", "https://api.github.com/o/r.git"]) {
      expect({ url: other, header: await header(other) }).toEqual({ url: other, header: "" });
    }
  });
  test("which secret is the token for a URL (GIT_TOKEN: only a host of the host repo's own remotes)", () => {
    const s = { GH_TOKEN: "gh", GITLAB_TOKEN: "gl", GIT_TOKEN: "any", "GIT_TOKEN_GIT_EXAMPLE_COM": "ex" };
    const own = new Set(["127.0.0.1:8080"]);
    expect(tokenFor("https://github.com/o/r", s, own)).toEqual({ name: "GH_TOKEN", value: "gh" });
    expect(tokenFor("https://gitlab.com/o/r", s, own)).toEqual({ name: "GITLAB_TOKEN", value: "gl" });
    expect(tokenFor("https://git.example.com/o/r", s, own)).toEqual({ name: "GIT_TOKEN_GIT_EXAMPLE_COM", value: "ex" });
    expect(tokenFor("http://127.0.0.1:8080/r.git", s, own)).toEqual({ name: "GIT_TOKEN", value: "any" });
    expect(tokenFor("http://127.0.0.1:8081/r.git", s, own)).toEqual({ name: null, withheld: "GIT_TOKEN" });
    expect(credentialHost("https://user@Example.com:8443/x")).toBe("example.com:8443");
  });
  test("gh --repo comes from a GitHub remote URL", () => {
    expect(githubRepo("https://github.com/o/r.git")).toBe("o/r");
    expect(githubRepo("git@github.com:o/r.git")).toBe("o/r");
    expect(githubRepo("https://gitlab.com/o/r.git")).toBeUndefined();
  });
  test("a push names the gate's own hooks dir; every other git gets none", () => {
    expect(gateGit(["push"], { hooksPath: "/g/hooks" }).slice(1, 3)).toEqual(["-c", "core.hooksPath=/g/hooks"]);
    expect(gateGit(["log"]).slice(1, 3)).toEqual(["-c", "core.hooksPath=/dev/null"]);
    expect(gitEnv({ path: "/usr/bin", home: "/h", verdict: { fifo: "/g/tmp/v/verdict", nonce: "n1" } })).toMatchObject({ SBX_VERDICT_FIFO: "/g/tmp/v/verdict", SBX_VERDICT_NONCE: "n1" });
  });
  test("untrusted-by-origin: the tips the scan may skip are the person's host refs and the gate's refs/remotes/* only", () => {
    const a = "a".repeat(40), b = "b".repeat(40), c = "c".repeat(40), d = "d".repeat(40), e = "e".repeat(40), f = "f".repeat(40);
    const host = [
      `${a} refs/heads/main`,
      `${b} refs/remotes/sandbox-demo/feature`,
      `${c} refs/remotes/origin/main`,
      `${f} refs/sbx-retired/demo/20260101T000000Z/feature`,
      `${f} refs/SBX-retired/demo/20260101T000000Z/other`,
      `${f} refs/sbx-anything/x`,
    ].join("\n");
    const gate = `${d} refs/remotes/origin/x\n${e} refs/heads/label\n${e} refs/tags/v1\n${e} refs/remotes/sandbox-demo/x\n${e} refs/sbx-created/origin/heads/x\nnot-a-sha refs/remotes/y\n`;
    expect(trustedTips(host, gate, "origin").sort()).toEqual([a, c, d]);
    // What the gate fetched of another remote is what that remote has, not the one pushed to.
    expect(trustedTips(host, gate, "fork").sort()).toEqual([a, c]);
    expect(trustedTips(host, gate).sort()).toEqual([a, c]);
  });
});

/** Every process's argv on this machine, joined. */
function allCmdlines(): string[] {
  const out: string[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      out.push(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" "));
    } catch {}
  }
  return out;
}

describe("pre-push hook", () => {
  /** Runs the hook as git would; `bridge` says what the bridge's end of the FIFO does. */
  const runHook = async (env: Record<string, string>, bridge: { line: string } | "dies-after-open" | "gone-before-open") => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-hook-"));
    try {
      const fifo = join(dir, "verdict");
      Bun.spawnSync(["mkfifo", fifo]);
      // As the bridge does: hold the FIFO open from before the push until it exits.
      const fd = bridge === "gone-before-open" ? undefined : openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
      const p = Bun.spawn(["sh", "-c", PRE_PUSH_HOOK, "pre-push"], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", SBX_VERDICT_FIFO: fifo, ...env }, stdin: "ignore" });
      if (typeof bridge === "object") writeSync(fd!, bridge.line);
      else if (bridge === "dies-after-open") {
        // The bridge dies after the hook is waiting: its end closes, the hook reads end-of-file.
        await Bun.sleep(150);
        closeSync(fd!);
      }
      const code = await p.exited;
      if (typeof bridge === "object") closeSync(fd!);
      return code;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  test("lets the push go on only for 'ok <nonce>'", async () => {
    expect(await runHook({ SBX_VERDICT_NONCE: "n123" }, { line: "ok n123\n" })).toBe(0);
    expect(await runHook({ SBX_VERDICT_NONCE: "n123" }, { line: "no\n" })).not.toBe(0);
    expect(await runHook({ SBX_VERDICT_NONCE: "n123" }, { line: "ok other\n" })).not.toBe(0);
  });
  test("stops the push when the bridge goes away without a verdict, or no nonce is set", async () => {
    expect(await runHook({ SBX_VERDICT_NONCE: "n123" }, "dies-after-open")).not.toBe(0);
    expect(await runHook({}, { line: "ok \n" })).not.toBe(0);
  });
  test("a bridge that died before the hook opened the FIFO: the hook ends at once instead of blocking in open(2) for ever", async () => {
    // No writer will ever come; a plain read-only open would block for good (the test's timeout is the bound).
    expect(await runHook({ SBX_VERDICT_NONCE: "n123" }, "gone-before-open")).not.toBe(0);
  }, 15_000);
  test("the hook starts no process of its own that could outlive it", () => {
    // Only shell built-ins: no sleep, no watcher, no subshell.
    const body = PRE_PUSH_HOOK.split("\n").filter((l) => l && !l.startsWith("#"));
    expect(body.join("\n")).not.toMatch(/\bsleep\b|&\s*$|\$\(|`|\(\s*trap/m);
  });
});

describe("push output", () => {
  test("object ids the gate pushed are shown as the names the sandbox pushed, across chunk splits", () => {
    const sha = "f".repeat(40);
    const got: string[] = [];
    const w = pushOutputRewriter(new Map([[sha, "feature"]]), (s) => got.push(s));
    w.write("To http://x/r.git\n * [new branch]      " + sha.slice(0, 10));
    w.write(sha.slice(10) + " -> feature\n");
    w.end();
    expect(got.join("")).toBe("To http://x/r.git\n * [new branch]      feature -> feature\n");
  });
});

describe("the early push's hook report and fast-forward rules", () => {
  const N = "0123456789abcdef0123456789abcdef";
  const A = "a".repeat(40), B = "b".repeat(40), Z = "0".repeat(40);

  test("the hook's ref lines are taken out of the push's stderr, whatever the chunking; the rest passes in order", async () => {
    const stream = `Enumerating objects\r\n${HOOK_REF} ${N} refs/heads/f ${A} ${B}\n\n${HOOK_REF} ${N} refs/tags/v1 ${Z} ${B}\n\n${HOOK_REFS_END} ${N}\nTo http://x/r.git\n`;
    for (const size of [1, 5, 17, 1000]) {
      let out = "";
      const r = hookRefsReader(N, (s) => (out += s));
      for (let i = 0; i < stream.length; i += size) r.write(stream.slice(i, i + size));
      r.end();
      expect(await r.refs).toEqual([
        { remoteRef: "refs/heads/f", remoteSha: A, localSha: B },
        { remoteRef: "refs/tags/v1", remoteSha: Z, localSha: B },
      ]);
      expect(out).toBe("Enumerating objects\rTo http://x/r.git\n");
    }
  });

  test("lines with another nonce (a stale or forged report) are not taken as the hook's", async () => {
    let out = "";
    const r = hookRefsReader(N, (s) => (out += s));
    r.write(`remote: \n${HOOK_REF} ${"f".repeat(32)} refs/heads/f ${Z} ${B}\n\n${HOOK_REFS_END} ${"f".repeat(32)}\nok\n`);
    r.end();
    expect(out).toContain(`${HOOK_REF} ${"f".repeat(32)}`);
    const settled = await Promise.race([r.refs.then(() => "resolved"), Bun.sleep(20).then(() => "pending")]);
    expect(settled).toBe("pending");
  });

  test("the real hook reports what git gives it on stdin, then waits for its verdict", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-hook-"));
    try {
      const fifo = join(dir, "verdict");
      Bun.spawnSync(["mkfifo", fifo]);
      const fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
      const p = Bun.spawn(["sh", "-c", PRE_PUSH_HOOK, "pre-push", "origin", "http://x/r.git"], {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", SBX_VERDICT_FIFO: fifo, SBX_VERDICT_NONCE: N },
        stdin: Buffer.from(`${B} ${B} refs/heads/f ${A}\n(delete) ${Z} refs/heads/old ${A}\n`),
        stderr: "pipe",
      });
      const r = hookRefsReader(N, () => undefined);
      const reading = (async () => {
        for await (const c of p.stderr) r.write(new TextDecoder().decode(c));
      })();
      expect(await r.refs).toEqual([
        { remoteRef: "refs/heads/f", remoteSha: A, localSha: B },
        { remoteRef: "refs/heads/old", remoteSha: A, localSha: Z },
      ]);
      writeSync(fd, `ok ${N}\n`);
      expect(await p.exited).toBe(0);
      await reading;
      closeSync(fd);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /** A gate whose git is a FakeExec: `ancestors` lists the "old new" pairs merge-base calls an ancestry. */
  const gateWith = (ancestors: string[]) => {
    const exec = new FakeExec().always((argv) => argv.includes("merge-base"), (argv) => ({ exitCode: ancestors.includes(`${argv.at(-2)} ${argv.at(-1)}`) ? 0 : 1 }));
    return { exec, gate: { paths: gatePaths("/g"), exec, hostRepo: "/h", path: "/usr/bin" } };
  };

  test("fast-forward rules: new refs and fast-forwards pass; rewinds, unknown tips and existing tags need the sandbox's force", async () => {
    const { exec, gate } = gateWith([`${A} ${B}`]);
    const branch = (force = false) => [{ dst: "refs/heads/f", sha: B, force }];
    const tag = (force = false) => [{ dst: "refs/tags/v1", sha: B, force }];
    const hook = (ref: string, remote: string) => [{ remoteRef: ref, remoteSha: remote, localSha: B }];
    expect(await fastForwards(gate, branch(), hook("refs/heads/f", Z))).toBe(true);
    expect(await fastForwards(gate, branch(), hook("refs/heads/f", A))).toBe(true);
    expect(await fastForwards(gate, branch(), hook("refs/heads/f", B))).toBe(true);
    expect(await fastForwards(gate, branch(), hook("refs/heads/f", "c".repeat(40)))).toBe(false);
    expect(await fastForwards(gate, branch(true), hook("refs/heads/f", "c".repeat(40)))).toBe(true);
    expect(await fastForwards(gate, tag(), hook("refs/tags/v1", Z))).toBe(true);
    expect(await fastForwards(gate, tag(), hook("refs/tags/v1", A))).toBe(false);
    expect(await fastForwards(gate, tag(true), hook("refs/tags/v1", A))).toBe(true);
    // A ref the hook names that the sandbox did not push: refused (nothing unexpected goes out forced).
    expect(await fastForwards(gate, branch(), hook("refs/heads/other", Z))).toBe(false);
    expect(exec.calls.map((c) => c.argv.slice(-3).join(" "))).toEqual([`--is-ancestor ${A} ${B}`, `--is-ancestor ${"c".repeat(40)} ${B}`]);
  });

  test("a verified fast-forward is reported as one; a forced update the sandbox asked for stays forced", () => {
    const got: string[] = [];
    const w = pushOutputRewriter(new Map([[B, "f"]]), (s) => got.push(s), new Map([["f", false], ["g", true]]));
    w.write(`To http://x/r.git\n + 1111111...2222222 ${B} -> f (forced update)\n + 3333333...4444444 g -> g (forced update)\n`);
    w.end();
    expect(got.join("")).toBe("To http://x/r.git\n   1111111..2222222  f -> f\n + 3333333...4444444 g -> g (forced update)\n");
  });
});

describe("ssh remotes", () => {
  test("transport of each URL form; ssh runs only for the ssh transport, as the host's command with BatchMode", () => {
    expect(["ssh://git@h/o/r", "git@h:o/r.git", "https://h/o/r", "http://h/o/r"].map(transportOf)).toEqual(["ssh", "ssh", "https", "http"]);
    const ssh = sshSettingsOf({ GIT_SSH_COMMAND: "ssh -i /k", SSH_AUTH_SOCK: "/run/agent", HOME: "/h" });
    expect(ssh).toEqual({ command: "ssh -i /k -o BatchMode=yes", env: { SSH_AUTH_SOCK: "/run/agent" } });
    expect(sshSettingsOf({})).toEqual({ command: "ssh -o BatchMode=yes", env: {} });
    const on = gateGit(["push"], { transport: "ssh", sshCommand: ssh.command });
    expect(on).toContain("core.sshCommand=ssh -i /k -o BatchMode=yes");
    expect(on).toContain("protocol.ssh.allow=always");
    // Any other transport keeps ssh off, whatever command is at hand.
    expect(gateGit(["push"], { transport: "https", sshCommand: ssh.command })).toContain("core.sshCommand=/bin/false");
  });
});

describe("sandboxes-apart: what git says the gate lacks, as a refusal can name it", () => {
  const P = "47d1ce11921ca9efbc33bc14132b9e9f44354b58";
  const C = "a5041499c95838548317a63c2c6ff7600a354104";
  test("git 2.39's words for each missing object", () => {
    const m = (s: string) => {
      const x = missingIn(s);
      return x && [x.kind, x.oid, x.of];
    };
    expect(m(`error: Could not read ${P}\nfatal: revision walk setup failed\n`)).toEqual(["commit", P, undefined]);
    expect(m(`error: Could not read ${P}\nfatal: Failed to traverse parents of commit ${C}\n`)).toEqual(["commit", P, C]);
    expect(m(`fatal: unable to read tree ${P}\n`)).toEqual(["tree", P, undefined]);
    expect(m(`fatal: unable to read ${P}\n`)).toEqual(["object", P, undefined]);
    expect(m(`fatal: bad object ${P}\n`)).toEqual(["object", P, undefined]);
    expect(m("fatal: pack has 3 unresolved deltas\nfatal: index-pack failed\n")).toEqual(["delta bases", "3", undefined]);
    expect(missingIn("fatal: pack is corrupted (SHA1 mismatch)\n")).toBeUndefined();
    expect(missingIn(`error: object ${P}: hasDotgit: contains '.git'\n`)).toBeUndefined();
    expect(new MissingObject("commit", P)).toBeInstanceOf(Error);
  });
});
