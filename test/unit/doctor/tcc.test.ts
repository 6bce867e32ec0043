// sbx doctor on a (fake) Mac: repos under ~/Desktop, ~/Documents or ~/Downloads need Full Disk Access for the daemon;
// doctor finds them (macOS sandboxes' repos and the one the person is in) and says how to grant it.
import { describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { runDoctor } from "../../../src/doctor/doctor";
import { checkFullDiskAccess, tccFolder } from "../../../src/doctor/tcc";
import { readEnv } from "../../../src/sys/env";
import { pathsFor } from "../../../src/sys/paths";
import { Store } from "../../../src/store/store";
import { FakeExec } from "../../fakes/exec";
import { runCli } from "../../support/cli";

const HOME = "/Users/alice";
const BUN = "/opt/homebrew/Cellar/bun/1.4.5/bin/bun";
const readable = () => {};
/** TCC's refusal as macOS reports it to a program it keeps out. */
const tccRefuses = (guarded: string) => (p: string) => {
  if (p.startsWith(guarded)) throw Object.assign(new Error(`EPERM: operation not permitted, scandir '${p}'`), { code: "EPERM" });
};

describe("tccFolder", () => {
  test("Desktop, Documents and Downloads of the home, at any depth, whatever the case; nothing else", () => {
    expect(tccFolder(HOME, `${HOME}/Documents/proj`)).toBe("Documents");
    expect(tccFolder(HOME, `${HOME}/desktop/a/b`)).toBe("Desktop");
    expect(tccFolder(`${HOME}/`, `${HOME}/Downloads`)).toBe("Downloads");
    expect(tccFolder(HOME, `${HOME}/src/proj`)).toBeNull();
    expect(tccFolder(HOME, `${HOME}/Documents-old/proj`)).toBeNull();
    expect(tccFolder(HOME, `/Users/bob/Documents/proj`)).toBeNull();
  });
});

describe("checkFullDiskAccess", () => {
  test("no repo in a guarded folder: ok, and nothing is probed", () => {
    let probed = 0;
    const c = checkFullDiskAccess({ home: HOME, repos: [{ path: `${HOME}/src/p`, what: "this repo" }], daemonProgram: BUN, probe: () => void probed++ });
    expect(c.status).toBe("ok");
    expect(probed).toBe(0);
  });

  test("a sandbox's repo under ~/Documents that this terminal reads: a warning that the daemon needs Full Disk Access, and where to give it", () => {
    const c = checkFullDiskAccess({ home: HOME, repos: [{ path: `${HOME}/Documents/proj`, what: "sandbox demo" }], daemonProgram: BUN, probe: readable });
    expect(c.status).toBe("warn");
    expect(c.detail).toContain("~/Documents/proj (sandbox demo)");
    expect(c.detail).toContain("Full Disk Access");
    expect(c.fix).toContain("System Settings → Privacy & Security → Full Disk Access");
    expect(c.fix).toContain(BUN);
    expect(c.fix).not.toContain("terminal");
    expect(c.fix).toContain("launchctl kickstart -k gui/$(id -u)/dev.sbx.daemon");
  });

  test("TCC refusing the read (EPERM, Operation not permitted): said as such; the terminal app is named too", () => {
    const c = checkFullDiskAccess({
      home: HOME,
      repos: [{ path: `${HOME}/Desktop/site`, what: "this repo" }, { path: `${HOME}/Documents/proj`, what: "sandbox demo" }],
      daemonProgram: BUN,
      terminal: "iTerm.app",
      probe: tccRefuses(`${HOME}/Desktop`),
    });
    expect(c.status).toBe("warn");
    expect(c.detail).toContain("reading ~/Desktop/site (this repo) failed: Operation not permitted (EPERM)");
    expect(c.detail).toContain("~/Desktop, ~/Documents");
    expect(c.fix).toContain(`${BUN} (the Bun the daemon runs`);
    expect(c.fix).toContain("your terminal app (iTerm.app)");
  });

  test("a repo that is gone is left out; one repo named twice is named once", () => {
    const gone = (p: string) => {
      if (p.endsWith("gone")) throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
    };
    const c = checkFullDiskAccess({
      home: HOME,
      repos: [{ path: `${HOME}/Documents/gone`, what: "sandbox old" }, { path: `${HOME}/Downloads/x`, what: "sandbox a" }, { path: `${HOME}/Downloads/x`, what: "this repo" }],
      daemonProgram: BUN,
      probe: gone,
    });
    expect(c.detail).not.toContain("gone");
    expect(c.detail.match(/Downloads\/x/g)).toHaveLength(1);
    expect(checkFullDiskAccess({ home: HOME, repos: [{ path: `${HOME}/Documents/gone`, what: "sandbox old" }], daemonProgram: BUN, probe: gone }).status).toBe("ok");
  });
});

describe("sbx doctor on a Mac", () => {
  const root = process.env.SBX_TEST_ROOT!;
  const INFO = ["docker", "info", "--format", "{{json .}}"];
  const fake = () => new FakeExec().expect(INFO, { exitCode: 127 }).expect(["git", "--version"], { stdout: "git version 2.39.5\n" });

  test("runDoctor: the check is there on darwin (for the person's home), not on Linux", async () => {
    const env = (platform: NodeJS.Platform) => readEnv({ vars: { HOME, USER: "alice", XDG_STATE_HOME: `${root}/tcc-state`, XDG_RUNTIME_DIR: `${root}/tcc-run` }, uid: 501, gid: 20, platform });
    const on = async (platform: NodeJS.Platform) =>
      (await runDoctor({ exec: fake(), env: env(platform), paths: pathsFor(env(platform)), bunVersion: "1.4.5", macosRepos: [{ path: `${HOME}/Documents/p`, what: "this repo" }], daemonProgram: BUN, probe: tccRefuses(HOME) })).find((c) => c.name === "disk access");
    expect((await on("darwin"))?.detail).toContain("reading ~/Documents/p (this repo) failed");
    expect(await on("linux")).toBeUndefined();
  });

  test("the CLI asks about its macOS sandboxes' repos and the repo it is in (a Docker sandbox's repo is not the daemon's to read)", async () => {
    const home = `${root}/home`;
    const here = join(home, "Downloads", "proj");
    mkdirSync(join(here, ".git"), { recursive: true });
    mkdirSync(join(here, "src"), { recursive: true });
    mkdirSync(`${root}/state/sbx`, { recursive: true });
    const store = new Store(`${root}/state/sbx/sbx.db`);
    store.createSandbox({ name: "mine", repo: join(home, "Documents", "app"), backend: "macos" });
    store.createSandbox({ name: "box", repo: join(home, "Desktop", "other"), backend: "docker" });
    store.close();
    mkdirSync(join(home, "Documents", "app"), { recursive: true });
    // The sandboxes' repos get doctor's git checks too (none of them set anything here).
    const exec = fake()
      .always((a) => a[0] === "git" && a.includes("config"), { exitCode: 1 })
      .always((a) => a[0] === "git" && a.includes("rev-parse"), { exitCode: 1 });
    const r = await runCli(["doctor", "--json"], { platform: "darwin", uid: 501, exec, cwd: join(here, "src"), vars: { TERM_PROGRAM: "Apple_Terminal", XDG_RUNTIME_DIR: `${root}/tcc-cli-run` } });
    // A runtime dir of its own that does not exist: the shared one another test file made is root's, not uid 501's, and
    // the CLI rightly refuses to look for a daemon in a dir of another account's (sys/private-dir.ts).
    expect(r.stderr).toBe("");
    const check = JSON.parse(r.stdout).checks.find((c: { name: string }) => c.name === "disk access");
    expect(check.status).toBe("warn");
    expect(check.detail).toContain("~/Documents/app (sandbox mine)");
    expect(check.detail).toContain("~/Downloads/proj (this repo)");
    expect(check.detail).not.toContain("Desktop");
    expect(check.fix).toContain("Full Disk Access");
  });
});
