// `sbx completion bash|zsh|fish` works in the real shells: verbs, each verb's options, agents, and this repo's sandbox
// names from a running daemon (served in this process on the CLI's socket), asked through the shells' own completion
// entry points: bash's _sbx with COMP_WORDS, zsh's completion widget on a PTY (what compadd was given), fish's complete -C.
// With no daemon, a TAB offers no names and starts none.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serveInprocDaemon, type InprocDaemon } from "../../support/inproc-daemon";
import { ShellSession } from "../../support/shell-session";
import { FakeExec } from "../../fakes/exec";

const CLI = join(import.meta.dir, "../../../src/cli/main.ts");
const has = (shell: string) => Bun.which(shell) !== null;
/** A suite's title, saying why when it is skipped. */
const inShell = (shell: string) => `in ${shell}${has(shell) ? "" : ` (skipped: ${shell} is not installed)`}`;

const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-completion-")));
const vars: Record<string, string> = {
  HOME: join(root, "home"),
  USER: "tester",
  PATH: `${join(root, "bin")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
  XDG_STATE_HOME: join(root, "state"),
  XDG_CONFIG_HOME: join(root, "config"),
  XDG_CACHE_HOME: join(root, "cache"),
  XDG_RUNTIME_DIR: join(root, "run"),
  NO_COLOR: "1",
};
const repo = join(root, "repo");
const other = join(root, "other");
const socket = join(root, "run", "sbx", "control.sock");

function git(...args: string[]): void {
  const p = Bun.spawnSync(["git", ...args], { stdout: "ignore", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${p.stderr.toString()}`);
}

/** Runs the real CLI as the shells do (the `sbx` on PATH). */
async function sbx(args: string[], cwd = repo): Promise<{ code: number; out: string }> {
  const p = Bun.spawn([join(root, "bin", "sbx"), ...args], { cwd, env: vars, stdout: "pipe", stderr: "ignore" });
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  return { code, out };
}

const scripts: Record<string, string> = {};
let daemon: InprocDaemon | null = null;

beforeAll(async () => {
  for (const d of [vars.HOME!, join(root, "bin")]) mkdirSync(d, { recursive: true });
  mkdirSync(vars.XDG_RUNTIME_DIR!, { recursive: true, mode: 0o700 });
  const bin = join(root, "bin", "sbx");
  writeFileSync(bin, `#!/bin/sh\nexec '${process.execPath}' --no-env-file --config=/dev/null '${CLI}' "$@"\n`);
  chmodSync(bin, 0o755);
  for (const r of [repo, other]) git("init", "-q", r);
  daemon = serveInprocDaemon(vars, new FakeExec());
  daemon.store.createSandbox({ name: "demo", repo, backend: "fake" });
  daemon.store.createSandbox({ name: "dev-2", repo, backend: "fake" });
  daemon.store.createSandbox({ name: "elsewhere", repo: other, backend: "fake" });
  const gone = daemon.store.createSandbox({ name: "gone", repo, backend: "fake" });
  daemon.store.setSandboxState(gone.id, "deleted");
  for (const shell of ["bash", "zsh", "fish"]) {
    const r = await sbx(["completion", shell]);
    expect(r.code).toBe(0);
    scripts[shell] = r.out;
  }
});

afterAll(async () => {
  await daemon?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** bash: _sbx run as bash runs it at a TAB, the cursor at the end of the last word; COMPREPLY as it would be inserted. */
async function bashOffers(words: string[], cwd = repo): Promise<string[]> {
  const file = join(root, "completion.bash");
  writeFileSync(file, scripts.bash!);
  const body = 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; _sbx; printf "%s\\n" "${COMPREPLY[@]}"';
  const p = Bun.spawn(["bash", "--norc", "--noprofile", "-c", body, "bash", file, ...words], { cwd, env: vars, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  expect({ code, err }).toEqual({ code: 0, err: "" });
  return out.split("\n").filter((w) => w !== "");
}

/** fish: `complete -C LINE`, the words without their descriptions. */
async function fishOffers(line: string, cwd = repo): Promise<string[]> {
  const file = join(root, "completion.fish");
  writeFileSync(file, scripts.fish!);
  const p = Bun.spawn(["fish", "--no-config", "-c", "source $argv[1]; complete -C $argv[2]", file, line], { cwd, env: vars, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  expect({ code, err }).toEqual({ code: 0, err: "" });
  return out.split("\n").filter((w) => w !== "").map((w) => w.split("\t")[0]!);
}

const AGENTS = ["claude", "codex", "gemini", "opencode", "aider"];

describe.skipIf(!has("bash"))(inShell("bash"), () => {
  test("the verbs, aliases included, and not the hidden __complete", async () => {
    const all = await bashOffers(["sbx", ""]);
    expect(all).toEqual(expect.arrayContaining(["create", "shell", "run", "rm", "list", "ls", "completion", "help"]));
    expect(all).not.toContain("__complete");
    expect(await bashOffers(["sbx", "re"])).toEqual(["rebuild"]);
  });

  test("a verb's options, and the program's own before a verb", async () => {
    expect(await bashOffers(["sbx", "rm", "--"])).toEqual(["--all", "--repo", "--force", "--yes", "--help"]);
    expect(await bashOffers(["sbx", "-"])).toEqual(["--version", "-V", "--help", "-h"]);
  });

  test("this repo's sandbox names where a verb takes a NAME, from the running daemon", async () => {
    for (const verb of ["shell", "exec", "rm", "stop", "rebuild", "limits", "bridge", "publish", "port"]) {
      expect(await bashOffers(["sbx", verb, ""])).toEqual(["demo", "dev-2"]);
    }
    expect(await bashOffers(["sbx", "rm", "demo", "d"])).toEqual(["demo", "dev-2"]);
    expect(await bashOffers(["sbx", "logs", "--sandbox", ""])).toEqual(["demo", "dev-2"]);
    expect(await bashOffers(["sbx", "create", ""])).toEqual([]);
  });

  test("sbx run: the agents and the names; after an agent, the names", async () => {
    expect(await bashOffers(["sbx", "run", ""])).toEqual([...AGENTS, "demo", "dev-2"]);
    expect(await bashOffers(["sbx", "run", "claude", ""])).toEqual(["demo", "dev-2"]);
  });

  test("--repo names another repo's sandboxes, also as --repo=DIR; its own value completes directories", async () => {
    expect(await bashOffers(["sbx", "shell", "--repo", other, ""])).toEqual(["elsewhere"]);
    expect(await bashOffers(["sbx", "shell", "--repo", "=", other, ""])).toEqual(["elsewhere"]);
    expect(await bashOffers(["sbx", "shell", "--repo", join(root, "oth")])).toEqual([other]);
  });

  test("nothing of sbx's after the name of a verb that runs a command, nor after --", async () => {
    expect(await bashOffers(["sbx", "shell", "demo", "--"])).toEqual([]);
    expect(await bashOffers(["sbx", "run", "demo", "--", ""])).toEqual([]);
  });

  test("an argument's choices: sbx completion SHELL", async () => {
    expect(await bashOffers(["sbx", "completion", ""])).toEqual(["bash", "zsh", "fish"]);
  });
});

describe.skipIf(!has("zsh"))(inShell("zsh"), () => {
  let sh: ShellSession;
  beforeAll(async () => {
    const dir = join(root, "zsh");
    mkdirSync(dir);
    sh = await ShellSession.start({ shell: "zsh", script: scripts.zsh!, dir, env: vars, cwd: repo });
  });
  afterAll(() => sh?.close());

  test("the verbs, with aliases, not __complete; a unique one is inserted", async () => {
    const { offered } = await sh.line("sbx \t");
    expect(offered).toEqual(expect.arrayContaining(["create", "shell", "run", "rm", "list", "ls", "completion", "help"]));
    expect(offered).not.toContain("__complete");
    expect((await sh.line("sbx reb\t")).line).toBe("sbx rebuild ");
  });

  test("a verb's options", async () => {
    expect((await sh.line("sbx rm --\t")).offered).toEqual(["--all", "--repo", "--force", "--yes", "--help"]);
  });

  test("this repo's sandbox names, from the running daemon; --repo's for --repo", async () => {
    expect((await sh.line("sbx shell \t")).offered).toEqual(["demo", "dev-2"]);
    expect((await sh.line("sbx stop demo \t")).offered).toEqual(["demo", "dev-2"]);
    expect((await sh.line("sbx logs --sandbox \t")).offered).toEqual(["demo", "dev-2"]);
    expect((await sh.line(`sbx shell --repo ${other} \t`)).line).toBe(`sbx shell --repo ${other} elsewhere `);
  });

  test("sbx run: the agents and the names", async () => {
    expect((await sh.line("sbx run \t")).offered).toEqual([...AGENTS, "demo", "dev-2"]);
  });
});

describe.skipIf(!has("fish"))(inShell("fish"), () => {
  test("the verbs, with aliases, not __complete", async () => {
    const all = await fishOffers("sbx ");
    expect(all).toEqual(expect.arrayContaining(["create", "shell", "run", "rm", "list", "ls", "completion", "help"]));
    expect(all).not.toContain("__complete");
  });

  test("a verb's options", async () => {
    expect((await fishOffers("sbx rm --")).sort()).toEqual(["--all", "--force", "--help", "--repo", "--yes"]);
  });

  test("this repo's sandbox names, from the running daemon; --repo's for --repo", async () => {
    expect(await fishOffers("sbx shell ")).toEqual(["demo", "dev-2"]);
    expect(await fishOffers("sbx rm demo ")).toEqual(["demo", "dev-2"]);
    expect(await fishOffers("sbx logs --sandbox ")).toEqual(["demo", "dev-2"]);
    expect(await fishOffers(`sbx shell --repo ${other} `)).toEqual(["elsewhere"]);
    expect(await fishOffers(`sbx shell --repo=${other} `)).toEqual(["elsewhere"]);
  });

  test("sbx run: the agents and the names", async () => {
    expect((await fishOffers("sbx run ")).sort()).toEqual([...AGENTS, "demo", "dev-2"].sort());
  });

  test("nothing of sbx's after the name of a verb that runs a command", async () => {
    expect(await fishOffers("sbx shell demo --")).toEqual([]);
  });
});

describe("with no daemon running", () => {
  test("a TAB offers no names and starts no daemon", async () => {
    await daemon!.stop();
    daemon = null;
    expect(existsSync(socket)).toBe(false);
    expect(await sbx(["__complete", "names"])).toEqual({ code: 0, out: "" });
    if (has("bash")) expect(await bashOffers(["sbx", "shell", ""])).toEqual([]);
    if (has("fish")) expect(await fishOffers("sbx shell ")).toEqual([]);
    await Bun.sleep(300); // an auto-started daemon would have made its socket by now
    expect(existsSync(socket)).toBe(false);
  });
});
