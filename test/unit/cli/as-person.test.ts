// `sudo sbx …` on a Mac: the command is handed, whole, to the person sudo works for; root with nobody to work for is refused.
import { describe, expect, test } from "bun:test";
import { sbxArgv } from "../../../src/client/autostart";
import { handOffArgv } from "../../../src/cli/as-person";
import { FakeExec } from "../../fakes/exec";
import { runCli } from "../../support/cli";

const DSCL = "/usr/bin/dscl";
const mac = () =>
  new FakeExec()
    .always([DSCL, "/Search", "-search", "/Users", "UniqueID", "501"], { stdout: "alice\t\tUniqueID = (\n    501\n)\n" })
    .always([DSCL, "/Search", "-search", "/Users", "UniqueID", "4242"], { stdout: "" })
    .always([DSCL, "/Search", "-read", "/Users/alice", "UniqueID", "PrimaryGroupID", "NFSHomeDirectory", "UserShell"], {
      stdout: "NFSHomeDirectory: /Users/alice\nPrimaryGroupID: 20\nUniqueID: 501\nUserShell: /bin/zsh\n",
    });

function recorder(code: number) {
  const runs: { argv: readonly string[]; env: Record<string, string>; cwd?: string | undefined }[] = [];
  return { runs, attach: async (argv: readonly string[], o: { env: Record<string, string>; cwd?: string }) => (runs.push({ argv, env: o.env, cwd: o.cwd }), code) };
}

describe("sudo sbx on macOS", () => {
  test("runs the same command as sudo's caller (sudo -n -H -u alice), on this terminal; its exit code is sbx's", async () => {
    const r = recorder(3);
    const res = await runCli(["list", "--json"], { platform: "darwin", uid: 0, vars: { SUDO_UID: "501", SUDO_USER: "alice", USER: "root" }, exec: mac(), attach: r.attach, cwd: "/Users/alice/src/p" });
    expect(res.code).toBe(3);
    expect(r.runs).toHaveLength(1);
    expect(r.runs[0]!.argv).toEqual(["/usr/bin/sudo", "-n", "-H", "-u", "alice", "--", ...sbxArgv(), "list", "--json"]);
    expect(r.runs[0]!.cwd).toBe("/Users/alice/src/p");
    expect(res.stderr).toContain("works for alice, not root");
    expect(res.stdout).toBe("");
  });

  test("shell completion (a silent verb) is handed over without a word on stderr, which would land in the prompt", async () => {
    const r = recorder(0);
    const res = await runCli(["__complete", "names"], { platform: "darwin", uid: 0, vars: { SUDO_UID: "501", USER: "root" }, exec: mac(), attach: r.attach });
    expect(r.runs.map((x) => x.argv.slice(-2))).toEqual([["__complete", "names"]]);
    expect(res.stderr).toBe("");
  });

  test("root with nobody to work for (root's login, sudo from root to root) is refused with 77; nothing runs", async () => {
    for (const vars of [{}, { SUDO_UID: "0", SUDO_USER: "root" }]) {
      const r = recorder(0);
      const res = await runCli(["list"], { platform: "darwin", uid: 0, vars: { USER: "root", ...vars }, exec: new FakeExec(), attach: r.attach });
      expect(res.code).toBe(77);
      expect(res.stderr).toContain("not root");
      expect(r.runs).toHaveLength(0);
    }
  });

  test("a SUDO_UID Directory Services does not know is refused with 78; nothing runs", async () => {
    const r = recorder(0);
    const res = await runCli(["list"], { platform: "darwin", uid: 0, vars: { SUDO_UID: "4242" }, exec: mac(), attach: r.attach });
    expect(res.code).toBe(78);
    expect(res.stderr).toContain("uid 4242");
    expect(r.runs).toHaveLength(0);
  });

  test("not on a Mac, or not root: no hand-over (Linux's `sudo sbx` stays root: its user backend needs it)", async () => {
    const r = recorder(0);
    await runCli(["doctor", "--json"], { platform: "linux", uid: 0, vars: { SUDO_UID: "1000" }, exec: new FakeExec().always(() => true, { stdout: "" }), attach: r.attach });
    expect(r.runs).toHaveLength(0);
  });

  test("handOffArgv: no prompt, the person's HOME, sbx's own argv then the person's", () => {
    expect(handOffArgv("alice", ["/opt/bun", "/x/main.ts"], ["shell", "demo"])).toEqual(["/usr/bin/sudo", "-n", "-H", "-u", "alice", "--", "/opt/bun", "/x/main.ts", "shell", "demo"]);
  });
});
