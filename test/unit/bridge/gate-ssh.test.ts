// The gate's ssh behind a parent proxy, its pure half: the host and port git gives ssh for each URL spelling, the hosts
// sbx refuses to name, `ssh -G`'s reading, and the ProxyCommand sbx writes, run through the real sh and the real ssh (the
// two readers it is quoted for) with a helper that records its argv.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseSshG, parseSshRemote, sshHostName, sshProxyOption } from "../../../src/bridge/gate-ssh";

const hasSsh = Bun.which("ssh") !== null;
let root = "";
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "sbx-gate-ssh-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Hosts an attacker would write into a remote's URL or a HostName: none may reach a shell or ssh's options. */
const HOSTILE = ["a;touch${IFS}PWN", "a$(touch PWN)", "a`touch PWN`", "a|touch PWN", "-oProxyCommand=touch PWN", "%h", "a%pb", "a b", "a\nb", "a'b", 'a"b', "a&b", "a>b", "a\\b", "*", "a?b", "~root", "[x"];

describe("parent-proxy-scope: ssh remote URLs are read as git reads them", () => {
  test("both spellings give the user, host and port git hands ssh", () => {
    expect(parseSshRemote("ssh://git@forge.corp:2222/org/repo.git")).toEqual({ user: "git", host: "forge.corp", port: 2222 });
    expect(parseSshRemote("ssh://forge.corp/org/repo.git")).toEqual({ user: null, host: "forge.corp", port: null });
    expect(parseSshRemote("ssh://git@forge.corp:/org/repo.git")).toEqual({ user: "git", host: "forge.corp", port: null });
    expect(parseSshRemote("ssh://git@[::1]:2222/r.git")).toEqual({ user: "git", host: "::1", port: 2222 });
    expect(parseSshRemote("ssh://a%40b@forge.corp/r.git")).toEqual({ user: "a@b", host: "forge.corp", port: null });
    expect(parseSshRemote("git@forge.corp:org/repo.git")).toEqual({ user: "git", host: "forge.corp", port: null });
    expect(parseSshRemote("git@forge.corp:/srv/repo.git")).toEqual({ user: "git", host: "forge.corp", port: null });
  });

  test("injection through the remote's host: metacharacters, %-tokens, a leading '-', blanks and newlines are refused in both spellings", () => {
    for (const h of HOSTILE) {
      expect({ h, ssh: parseSshRemote(`ssh://git@${h}/r.git`), sshEncoded: parseSshRemote(`ssh://git@${encodeURIComponent(h)}/r.git`), scp: parseSshRemote(`git@${h}:r.git`) }).toEqual({ h, ssh: null, sshEncoded: null, scp: null });
      expect({ h, name: sshHostName(h) }).toEqual({ h, name: null });
    }
    expect(parseSshRemote("ssh://git@forge.corp:99999/r.git")).toBeNull();
    expect(parseSshRemote("ssh://git@forge.corp:22x/r.git")).toBeNull();
    expect(parseSshRemote("ssh://forge.corp")).toBeNull();
    expect(sshHostName("Forge.Corp")).toBe("forge.corp");
    expect(sshHostName("10.0.0.5")).toBe("10.0.0.5");
  });

  test("ssh -G: the real host and port, and the user's own ProxyCommand or ProxyJump (none is none)", () => {
    expect(parseSshG("user git\nhostname real.corp\nport 443\nproxyusefdpass no\n")).toEqual({ hostname: "real.corp", port: 443, ownProxy: null });
    expect(parseSshG("hostname h\nport 22\nproxyjump bastion\n").ownProxy).toBe("proxyjump bastion");
    expect(parseSshG("hostname h\nport 22\nproxycommand nc -X connect -x p:3128 %h %p\n").ownProxy).toBe("proxycommand nc -X connect -x p:3128 %h %p");
    expect(parseSshG("hostname h\nproxycommand none\n").ownProxy).toBeNull();
  });
});

describe.skipIf(!hasSsh)(`parent-proxy-scope: the ProxyCommand sbx writes reaches its helper word for word${hasSsh ? "" : " (skipped: no ssh client)"}`, () => {
  /**
   * Runs the real ssh as git runs core.sshCommand (`sh -c '<command> "$@"'`) with sbx's option and a helper that writes
   * its argv, one word a line, to a file and fails (so ssh stops there); returns the words.
   */
  async function helperArgv(helperDir: string, host: string, port: number): Promise<string[]> {
    const out = join(root, "argv");
    rmSync(out, { force: true });
    const recorder = join(helperDir, "rec.sh");
    writeFileSync(recorder, `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done > ${JSON.stringify(out)}\nexit 1\n`, { mode: 0o755 });
    const option = sshProxyOption(["/bin/sh", recorder, "%h", "%p", "$(touch PWN)"], host, port);
    const command = `ssh -F /dev/null -o BatchMode=yes ${option}`;
    const p = Bun.spawn(["sh", "-c", `${command} "$@"`, command, "-p", "9", "--", "alias.invalid", "true"], { cwd: root, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", SHELL: "/bin/sh" }, stdout: "ignore", stderr: "ignore" });
    await p.exited;
    return existsSync(out) ? readFileSync(out, "utf8").split("\n").slice(0, -1) : [];
  }

  test("helper paths with quotes, %-tokens, blanks and $( ) reach it as written; host and port are sbx's, never ssh's %h/%p", async () => {
    const dir = join(root, "it's a %h dir $(touch PWN)");
    rmSync(dir, { recursive: true, force: true });
    Bun.spawnSync(["mkdir", "-p", dir]);
    expect(await helperArgv(dir, "forge.corp", 2222)).toEqual(["%h", "%p", "$(touch PWN)", "forge.corp", "2222"]);
    expect(await helperArgv(dir, "::1", 22)).toEqual(["%h", "%p", "$(touch PWN)", "::1", "22"]);
    expect(existsSync(join(root, "PWN"))).toBe(false);
  });

  test("a word with a control character is never written into a ProxyCommand", () => {
    expect(() => sshProxyOption(["/usr/bin/bun", "/x\n/y.ts"], "forge.corp", 22)).toThrow();
  });
});
