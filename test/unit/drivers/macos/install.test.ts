// The macOS root kit `sbx service install` puts in place: golden transcripts (install, uninstall), visudo before any write, sudo without a terminal, and the backend refusing without it.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { macosBackendHere } from "../../../../src/drivers/macos/backend";
import { installKit, kitHelperArgv, kitMissing, kitPaths, renderKit, requireKit, uninstallKit, type KitSource } from "../../../../src/drivers/macos/install";
import { sudoHelperArgv } from "../../../../src/drivers/macos/sudo-root";
import { SbxError } from "../../../../src/core/errors";
import { createExec, type Exec } from "../../../../src/sys/exec";
import { FakeExec } from "../../../fakes/exec";
import { golden } from "./golden";

const tmp = mkdtempSync(join(tmpdir(), "sbx-kit-test-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const source: KitSource = { bun: "/Users/alice/.bun/bin/bun", helperSource: "/Users/alice/src/sbx/src/drivers/macos/privileged.ts", shimDir: "/Users/alice/src/sbx/shims" };
const k = kitPaths("alice");
const isSudo = (a: readonly string[]) => a[0] === "/usr/bin/sudo";
const isBuild = (a: readonly string[]) => a.includes("build");
/** Transcript with the per-run scratch dir named <tmp>; root's commands marked `root#` (through sudo), the user's `alice$`. */
const transcript = (exec: FakeExec, scratch: string) =>
  exec.calls
    .map((c) => (isSudo(c.argv) ? `root# ${c.argv.slice(1).join(" ")}` : `alice$ ${c.argv.join(" ")}`).replaceAll(scratch, "<tmp>"))
    .join("\n") + "\n";

describe("installKit", () => {
  test("golden: the helper is bundled, visudo checks the rule, then root-owned copies, the rule and the LaunchDaemon", async () => {
    const scratch = mkdtempSync(join(tmp, "i-"));
    const exec = new FakeExec().always(isBuild).always(isSudo);
    const r = await installKit(exec, { hostUser: "alice", source, tmp: scratch });
    golden("kit-install.txt", transcript(exec, scratch));
    expect(r.paths).toEqual(k);
    expect(r.sudoers).toBe(renderKit("alice", k).sudoers);
    // The rule sudo is given is the one shown, and it was checked before anything was written as root.
    expect(await Bun.file(join(scratch, "sudoers")).text()).toBe(r.sudoers);
    const first = exec.calls.findIndex((c) => c.argv.includes("/usr/bin/install"));
    const visudo = exec.calls.findIndex((c) => c.argv.includes("/usr/sbin/visudo"));
    expect(visudo).toBeGreaterThan(-1);
    expect(visudo).toBeLessThan(first);
  });

  test("the helper it bundles runs on its own (no node_modules, no source tree) and refuses a request not made through sudo", async () => {
    const scratch = mkdtempSync(join(tmp, "b-"));
    const real = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });
    // The real build; the root steps are only recorded.
    const exec: Exec = { ...real, run: (argv, opts) => (argv[0] === "/usr/bin/sudo" ? Promise.resolve({ argv: [...argv], exitCode: 0, stdout: "", stderr: "" }) : real.run(argv, opts)) };
    await installKit(exec, { hostUser: "alice", source: { ...source, bun: process.execPath, helperSource: join(import.meta.dir, "../../../../src/drivers/macos/privileged.ts") }, tmp: scratch });
    const r = Bun.spawnSync([process.execPath, "--no-env-file", "--config=/dev/null", join(scratch, "privileged.js"), '{"op":"pf-state"}'], { cwd: "/", env: { PATH: "/usr/bin:/bin" }, stdout: "pipe", stderr: "pipe" });
    expect(r.exitCode).toBe(77);
    expect(JSON.parse(r.stderr.toString())).toMatchObject({ error: "permission", message: "the helper only serves requests made through sudo" });
  });

  test("a rule visudo refuses is never installed, and nothing else is either", async () => {
    const exec = new FakeExec().always(isBuild).expect((a) => a.includes("/usr/sbin/visudo"), { exitCode: 1, stderr: ">>> sudoers: syntax error near line 4 <<<" });
    const err = await installKit(exec, { hostUser: "alice", source }).catch((e) => e);
    expect(String(err.message)).toContain("syntax error");
    expect(String(err.hint)).toContain("checking the sudoers rule with visudo");
    expect(exec.calls.some((c) => c.argv.includes("/usr/bin/install"))).toBe(false);
    expect(exec.unexpected).toBeNull();
  });

  test("sudo that cannot ask for a password (no terminal): a permission error that says to run it from a terminal", async () => {
    const exec = new FakeExec().always(isBuild).always(isSudo, { exitCode: 1, stderr: "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper" });
    const err = (await installKit(exec, { hostUser: "alice", source }).catch((e) => e)) as SbxError;
    expect(err).toBeInstanceOf(SbxError);
    expect(err.code).toBe("permission");
    expect(err.hint).toContain("from a terminal");
  });

  test("what the sudoers rule allows is exactly what the backend runs as root", () => {
    const rule = renderKit("alice", k).sudoers;
    const argv = sudoHelperArgv(kitHelperArgv(k), { op: "ensure-share" });
    // Bun as root reads neither the caller's directory's bunfig.toml (a preload) nor its .env.
    expect(argv.slice(0, 6)).toEqual(["/usr/bin/sudo", "-n", "/usr/local/libexec/sbx/bun", "--no-env-file", "--config=/dev/null", "/usr/local/libexec/sbx/privileged.js"]);
    // sudoers wants `=` escaped in a command's arguments.
    expect(rule).toContain("Cmnd_Alias SBX_ALICE_HELPER = /usr/local/libexec/sbx/bun --no-env-file --config\\=/dev/null /usr/local/libexec/sbx/privileged.js *");
  });
});

describe("uninstallKit", () => {
  test("golden: with another user's rule left, only this user's rule goes", async () => {
    const exec = new FakeExec().always(isSudo);
    await uninstallKit(exec, { hostUser: "alice", otherRules: () => ["sbx_bob"] });
    golden("kit-uninstall-shared.txt", transcript(exec, tmp));
  });

  test("golden: the last user's uninstall removes the LaunchDaemon and the kit too; again is a no-op that succeeds", async () => {
    const exec = new FakeExec().always(isSudo);
    await uninstallKit(exec, { hostUser: "alice", otherRules: () => [] });
    golden("kit-uninstall-last.txt", transcript(exec, tmp));
    const again = new FakeExec().always(isSudo);
    expect((await uninstallKit(again, { hostUser: "alice", otherRules: () => [] })).removed).toEqual([]);
  });
});

describe("without the kit", () => {
  test("kitMissing lists what is not there; requireKit says to run sbx service install", () => {
    expect(kitMissing(k, () => true)).toEqual([]);
    expect(kitMissing(k, (p) => p !== k.sudoers)).toEqual([k.sudoers]);
    const err = (() => {
      try {
        requireKit(k, (p) => p !== k.helper);
      } catch (e) {
        return e as SbxError;
      }
    })();
    expect(err?.code).toBe("not_available");
    expect(err?.message).toContain(k.helper);
    expect(err?.hint).toContain("sbx service install");
  });

  test("the backend as a Mac runs it refuses to create a sandbox before asking sudo for anything", async () => {
    const exec = new FakeExec(); // any call fails the test
    const b = macosBackendHere({ exec, hostUser: "alice", runtimeDir: "/tmp/sbx-501", kit: kitPaths("alice", join(tmp, "not-installed")) });
    const spec = {
      id: "28008768e2f6",
      name: "demo",
      repo: "/Users/alice/src/demo",
      dir: "/tmp/x",
      hostUser: { name: "alice", uid: 501, gid: 20, home: "/Users/alice", shell: "/bin/zsh" },
      sockets: { dir: "/tmp/sbx-501/sb/28008768e2f6", proxy: "/p", bridge: "/b" },
      env: {},
      overlays: [],
      options: { driver: "user" as const, proxyPort: 17001 },
    };
    const err = (await b.apply(spec).catch((e) => e)) as SbxError;
    expect(err).toBeInstanceOf(SbxError);
    expect(err.code).toBe("not_available");
    expect(exec.calls).toEqual([]);
  });
});
