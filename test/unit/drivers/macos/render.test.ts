// Golden and table tests of the macOS renderers (pf anchor, sudoers, zsh rc, shims, plist) and of shared shell-rc provisioning.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { anchorName, guestUser, parseAnchorName, parseGuestUser, pickId } from "../../../../src/drivers/macos/naming";
import { SEATBELT_DENIED_SERVICES, renderPfAnchor, renderPrivilegedPlist, renderSeatbelt, renderSudoers, renderZshRc } from "../../../../src/drivers/macos/render";
import { sandboxEnv } from "../../../../src/drivers/env";
import { fishQuote, renderShellRc, renderShimWrappers, shQuote } from "../../../../src/drivers/provision/provision";
import { golden } from "./golden";
import { kitHelperArgv, kitPaths } from "../../../../src/drivers/macos/install";

const HELPER = kitHelperArgv(kitPaths("alice"));

describe("pf anchor", () => {
  test("golden: pass to the proxy port, block and log every other TCP/UDP of the uid", () => {
    const text = renderPfAnchor({ user: "sbx_alice_28008768e2f6", uid: 7001, port: 17001 });
    golden("pf-anchor.conf", text);
    const rules = text.split("\n").filter((l) => l && !l.startsWith("#"));
    expect(rules[0]).toStartWith("pass out quick on lo0 inet proto tcp from any to 127.0.0.1 port 17001 user 7001");
    expect(rules.slice(1).every((r) => r.startsWith("block drop out log quick") && r.endsWith("user 7001"))).toBe(true);
    expect(rules).toHaveLength(3);
  });

  test.each([
    [{ user: "sbx_a_1", uid: 7001, port: 80 }, /unprivileged/],
    [{ user: "sbx_a_1", uid: 0, port: 17001 }, /bad uid/],
    [{ user: "x; pass all", uid: 7001, port: 17001 }, /bad user/],
  ])("refuses %j", (input, why) => {
    expect(() => renderPfAnchor(input)).toThrow(why);
  });

  test("anchors are direct children of com.apple (deeper ones load but never apply)", () => {
    expect(anchorName(7001)).toBe("com.apple/sbx_7001");
    expect(parseAnchorName("com.apple/sbx_7001")).toBe(7001);
    expect(parseAnchorName("com.apple/sbx/uid_7001")).toBeNull();
  });
});

describe("Seatbelt profile", () => {
  const input = { port: 17001, sockets: ["/private/tmp/sbx-501/sb/0a1b/bridge.sock"], home: "/Users/sbx_alice_0a1b" };

  test("no network but the proxy port on the loopback and the bridge socket; no LaunchServices, pasteboard or mDNSResponder", () => {
    const p = renderSeatbelt(input);
    const lines = p.split("\n");
    expect(lines.slice(0, 4)).toEqual(["(version 1)", "(allow default)", "(deny network*)", '(allow network-outbound (remote ip "localhost:17001"))']);
    expect(lines).toContain('(allow network-outbound (remote unix-socket (path-literal "/private/tmp/sbx-501/sb/0a1b/bridge.sock")))');
    // Every allow of the network names the proxy's port, the bridge socket or the guest's own home: nothing wider.
    const allows = lines.filter((l) => l.startsWith("(allow network"));
    expect(allows).toHaveLength(4);
    for (const a of allows) expect(a.includes('"localhost:17001"') || a.includes(input.sockets[0]!) || a.includes(`(subpath "${input.home}")`)).toBe(true);
    for (const n of ["com.apple.coreservices.launchservicesd", "com.apple.pasteboard.1", "com.apple.mDNSResponder"]) expect(p).toContain(`(global-name "${n}")`);
    expect(SEATBELT_DENIED_SERVICES.every((n) => p.includes(`(global-name "${n}")`))).toBe(true);
    for (const prog of ["/usr/bin/open", "/bin/launchctl", "/usr/bin/pbcopy"]) expect(p).toContain(`(literal "${prog}")`);
    // Balanced: sandbox-exec refuses a profile that does not parse, and a guest would then run with none.
    expect([...p].filter((c) => c === "(").length).toBe([...p].filter((c) => c === ")").length);
  });

  test.each([
    [{ ...input, port: 80 }, /bad proxy port/],
    [{ ...input, sockets: ['/tmp/x") (allow network*) ("'] }, /cannot be written/],
    [{ ...input, sockets: ["/tmp/a\\b"] }, /cannot be written/],
    [{ ...input, home: "/Users/x\n(allow network*)" }, /cannot be written/],
    [{ ...input, home: "relative" }, /cannot be written/],
  ])("refuses %j rather than write it into the profile", (bad, why) => {
    expect(() => renderSeatbelt(bad)).toThrow(why);
  });
});

describe("sudoers rule", () => {
  test("golden: the helper as root, anything as the host's own guests, nothing else", () => {
    const text = renderSudoers({ hostUser: "alice", helperArgv: HELPER });
    golden("sudoers-alice", text);
    const rules = text.split("\n").filter((l) => l && !l.startsWith("#"));
    expect(rules).toContain("alice ALL = (root) NOPASSWD: SBX_ALICE_HELPER, SBX_ALICE_PFLOG, SBX_ALICE_SESSION");
    // Sessions: su - to one of alice's guests only, with -f (no rc file of the guest's before the Seatbelt profile).
    expect(rules).toContain("Cmnd_Alias SBX_ALICE_SESSION = /usr/bin/su - sbx_alice_* -f -c *");
    expect(rules).toContain("Cmnd_Alias SBX_ALICE_PFLOG = /usr/sbin/tcpdump -l -n -e -ttt -i pflog0");
    expect(rules).toContain("alice ALL = (%sbx_alice) NOPASSWD: ALL");
    expect(rules.filter((r) => r.includes("(root)"))).toHaveLength(1);
  });

  test("as a guest, nothing of the person's environment is kept (macOS keeps SSH_AUTH_SOCK, DISPLAY, EDITOR…), and umask 077", () => {
    const rules = renderSudoers({ hostUser: "alice", helperArgv: HELPER }).split("\n");
    expect(rules).toContain("Defaults>%sbx_alice env_reset, !env_keep, !env_check, umask=0077, umask_override");
  });

  test.skipIf(!existsSync("/usr/sbin/visudo"))("a real visudo parses the rule (sudo's grammar is the Mac's)", () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-sudoers-"));
    try {
      const file = join(dir, "sbx_alice");
      writeFileSync(file, renderSudoers({ hostUser: "alice", helperArgv: HELPER }));
      const r = Bun.spawnSync(["/usr/sbin/visudo", "-cf", file], { stdout: "pipe", stderr: "pipe" });
      expect({ code: r.exitCode, out: (r.stdout.toString() + r.stderr.toString()).trim() }).toEqual({ code: 0, out: `${file}: parsed OK` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test.each([
    [{ hostUser: "al ice", helperArgv: HELPER }, /cannot be named/],
    [{ hostUser: "alice", helperArgv: ["bun", "x.js"] }, /absolute/],
    [{ hostUser: "alice", helperArgv: ["/Library/Application Support/bun"] }, /misread/],
    [{ hostUser: "alice", helperArgv: ["/usr/local/libexec/sbx/bun", "--config=/x,ALL", "/h.js"] }, /misread/],
  ])("refuses %j", (input, why) => {
    expect(() => renderSudoers(input)).toThrow(why);
  });
});

describe("zsh rc and shims", () => {
  const env = { ...sandboxEnv("demo", { proxyPort: 17001, bridgeSocket: "/var/run/sbx/sb/28008768e2f6/bridge.sock" }), WEIRD: "it's $HOME `x`" };
  test("golden: .zshenv, .zprofile, .zshrc", () => {
    const files = renderZshRc({ home: "/Users/sbx_alice_28008768e2f6", sandbox: "demo", env });
    expect(files.map((f) => f.path)).toEqual([".zshenv", ".zprofile", ".zshrc"]);
    golden("zsh-rc.txt", files.map((f) => `==> ~/${f.path} (${f.mode.toString(8)})\n${f.content}`).join(""));
    expect(files[0]!.content).toContain("path=('/Users/sbx_alice_28008768e2f6/bin' $path)");
    expect(files[1]!.content).toContain("path=('/Users/sbx_alice_28008768e2f6/bin' $path)");
  });

  test("golden: ~/bin shim wrappers exec the installed shims on the installed Bun", () => {
    const files = renderShimWrappers({ runtime: "/usr/local/libexec/sbx/bun", shimDir: "/usr/local/libexec/sbx/shims" });
    expect(files.map((f) => [f.path, f.mode])).toEqual([["bin/git", 0o755], ["bin/gh", 0o755], ["bin/sbx-egress", 0o755]]);
    golden("shims.txt", files.map((f) => `==> ~/${f.path}\n${f.content}`).join(""));
  });

  test("quoting survives the shell: values come back byte for byte", async () => {
    const nasty = "a'b\"c $HOME `id` \\ \n end";
    const sh = Bun.spawnSync(["sh", "-c", `X=${shQuote(nasty)}; printf %s "$X"`]);
    expect(sh.stdout.toString()).toBe(nasty);
  });

  test("bash and fish renderings", () => {
    const bash = renderShellRc({ shell: "bash", binDir: "/home/g/bin", env: { A: "1" }, sandbox: "s" });
    expect(bash.map((f) => f.path)).toEqual([".bash_profile", ".bashrc"]);
    expect(bash[1]!.content).toContain("export A='1'");
    const fish = renderShellRc({ shell: "fish", binDir: "/home/g/bin", env: { A: "it's" }, sandbox: "s" });
    expect(fish[0]!.content).toContain(`set -gx A ${fishQuote("it's")}`);
    expect(fish[0]!.content).toContain("fish_add_path --global --move --path '/home/g/bin'");
    expect(() => renderShellRc({ shell: "zsh", binDir: "bin", env: {}, sandbox: "s" })).toThrow(/absolute/);
    expect(() => renderShellRc({ shell: "zsh", binDir: "/b", env: { "A-B": "1" }, sandbox: "s" })).toThrow(/invalid environment/);
  });
});

describe("LaunchDaemon plist", () => {
  test("golden: reapply-all at load and when pf.conf changes", () => {
    const text = renderPrivilegedPlist({ label: "dev.sbx.privileged", helperArgv: HELPER, log: "/private/var/log/sbx-privileged.log" });
    golden("sbx-privileged.plist", text);
    expect(text).toContain("<string>{&quot;op&quot;:&quot;reapply-all&quot;}</string>");
    expect(text).toContain("<string>/etc/pf.conf</string>");
  });
});

describe("naming", () => {
  test("guest names round-trip and never match another host's guests", () => {
    const u = guestUser("Alice.Smith", "28008768e2f6");
    expect(u).toBe("sbx_alicesmith_28008768e2f6");
    expect(parseGuestUser("Alice.Smith", u)).toBe("28008768e2f6");
    expect(parseGuestUser("bob", u)).toBeNull();
    expect(parseGuestUser("alice", "sbx_alice_")).toBeNull();
    expect(() => guestUser("alice", "../x")).toThrow();
  });

  test("UIDs: lowest free in range; a full range says what to do", () => {
    expect(pickId(new Set([7000, 7001, 7003]), { min: 7000, max: 7005 }, "user id")).toBe(7002);
    expect(() => pickId(new Set([1, 2]), { min: 1, max: 2 }, "user id")).toThrow(/no free user id/);
  });
});
