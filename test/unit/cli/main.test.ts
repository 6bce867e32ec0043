// CLI parsing, help, version and exit codes: typed errors map to sysexits; unbuilt verbs exit 69, never pretend.
import { describe, expect, test } from "bun:test";
import { Command } from "commander";
import { ERROR_CODES, EXIT_MEANINGS, SbxError } from "../../../src/core/errors";
import { colorLevel } from "../../../src/cli/render";
import type { Verb } from "../../../src/cli/verb";
import { verbs } from "../../../src/cli/verbs";
import { VERSION } from "../../../src/version";
import pkg from "../../../package.json";
import { runCli } from "../../support/cli";

const REQUIRED_VERBS = [
  "create", "shell", "run", "list", "stop", "rm", "prune", "allow", "deny", "approvals", "logs", "daemon", "service", "doctor",
];

describe("sbx --help and --version", () => {
  test("--help lists every verb and exits 0", async () => {
    const r = await runCli(["--help"]);
    expect(r.code).toBe(0);
    for (const v of REQUIRED_VERBS) expect(r.stdout).toMatch(new RegExp(`^  ${v}[ |]`, "m"));
  });

  test("every verb has its own --help that exits 0", async () => {
    for (const v of verbs) {
      const r = await runCli([v.name, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`Usage: sbx ${v.name}`);
      expect(r.stdout.replace(/\s+/g, " ")).toContain(v.summary);
    }
  });

  test("--help lists every exit code sbx returns with its meaning, and 127 for a command not in the sandbox", async () => {
    const r = await runCli(["--help"]);
    const listed = new Map([...r.stdout.matchAll(/^ {2}(\d+) +(\S.*)$/gm)].map((m) => [Number(m[1]), m[2]!]));
    // Every code an error can carry, and every value of ExitCode that has a meaning.
    for (const code of ERROR_CODES) expect(listed.has(new SbxError(code, "x").exitCode)).toBe(true);
    for (const [code, meaning] of Object.entries(EXIT_MEANINGS)) expect(listed.get(Number(code))).toBe(meaning ?? undefined);
    expect(listed.get(127)).toContain("does not exist in the sandbox");
    expect(r.stdout).toContain("exits with its own code");
  });

  test("--version prints the package version", async () => {
    const r = await runCli(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(VERSION);
    expect(VERSION).toBe(pkg.version);
  });

  test("no arguments prints help and exits 64", async () => {
    const r = await runCli([]);
    expect(r.code).toBe(64);
    expect(r.stdout + r.stderr).toContain("Usage: sbx");
  });
});

describe("exit codes", () => {
  test("an unknown verb is a usage error (64) with a suggestion", async () => {
    const r = await runCli(["creat"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("unknown command 'creat'");
    expect(r.stderr).toContain("create");
  });

  test("a missing argument is a usage error (64)", async () => {
    const r = await runCli(["create"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("missing required argument");
  });

  test("an unknown option is a usage error (64)", async () => {
    const r = await runCli(["doctor", "--frobnicate"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("unknown option");
  });

  test("commander's own errors read as sbx's: what was wrong, then what to do", async () => {
    const opt = await runCli(["doctor", "--frobnicate"]);
    expect(opt.stderr).toBe("sbx: unknown option '--frobnicate'\nhint: `sbx doctor --help` shows its arguments and options.\n");
    const verb = await runCli(["creat"]);
    expect(verb.stderr).toBe("sbx: unknown command 'creat'\nhint: Did you mean `sbx create`? `sbx --help` lists the commands.\n");
  });

  test("sbx help WORD for neither a command nor a guide says so (64), not the whole help; help ls is list's", async () => {
    const r = await runCli(["help", "nosuch"]);
    expect({ code: r.code, out: r.stdout, err: r.stderr }).toEqual({
      code: 64,
      out: "",
      err: "sbx: there is no command or guide 'nosuch'\nhint: `sbx --help` lists the commands, `sbx help topics` the guides.\n",
    });
    expect((await runCli(["help", "ls"])).stdout).toContain("Usage: sbx list|ls");
    for (const w of ["help", "--help"]) expect((await runCli(["help", w])).stderr).not.toContain("no command or guide");
  });

  test("ls is list", async () => {
    const r = await runCli(["ls", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: sbx list|ls");
  });

  test("an SbxError's exit code and hint reach the user", async () => {
    const failing: Verb = {
      name: "boom",
      summary: "fails",
      declare: (cmd: Command) => void cmd.argument("<x>"),
      run: async () => {
        throw new SbxError("config", "bad config file", { hint: "fix line 3" });
      },
    };
    const r = await runCli(["boom", "x"], { verbs: [failing] });
    expect(r.code).toBe(78);
    expect(r.stderr).toContain("sbx: bad config file");
    expect(r.stderr).toContain("hint: fix line 3");
  });

  test("an unexpected exception is exit 70 (software) with a report hint", async () => {
    const crashing: Verb = {
      name: "crash",
      summary: "crashes",
      declare: () => undefined,
      run: async () => {
        throw new TypeError("undefined is not a function");
      },
    };
    const r = await runCli(["crash"], { verbs: [crashing] });
    expect(r.code).toBe(70);
    expect(r.stderr).toContain("bug in sbx");
  });

  test("arguments after -- reach the verb untouched", async () => {
    let got: string[] = [];
    const echo: Verb = {
      name: "echoargs",
      summary: "echo",
      runsCommand: true,
      declare: (cmd: Command) => void cmd.argument("<name>").argument("[command...]"),
      run: async (_ctx, args) => {
        got = args;
        return 0;
      },
    };
    const r = await runCli(["echoargs", "demo", "--", "ls", "-la", "--color"], { verbs: [echo] });
    expect(r.code).toBe(0);
    expect(got).toEqual(["demo", "ls", "-la", "--color"]);
    // Without `--` too: the command's own options are not sbx's.
    await runCli(["echoargs", "demo", "ls", "-la"], { verbs: [echo] });
    expect(got).toEqual(["demo", "ls", "-la"]);
  });

  test("verbs that run no command parse options after their arguments (sbx rm demo --force)", async () => {
    let seen: Record<string, unknown> = {};
    const rmLike: Verb = {
      name: "rmlike",
      summary: "rm",
      declare: (cmd: Command) => void cmd.argument("<name>").option("--force", "f").option("--sandbox <n>", "s"),
      run: async (_ctx, args, opts) => {
        seen = { args, ...opts };
        return 0;
      },
    };
    const r = await runCli(["rmlike", "demo", "--force", "--sandbox", "x"], { verbs: [rmLike] });
    expect(r.code).toBe(0);
    expect(seen).toEqual({ args: ["demo"], force: true, sandbox: "x" });
  });
});

describe("sbx shell arguments", () => {
  test("no name and no --attach is a usage error that says both ways", async () => {
    const r = await runCli(["shell"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("--attach");
  });

  test("--attach takes no sandbox name or command", async () => {
    const r = await runCli(["shell", "--attach", "s-1", "demo"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("sbx shell --attach s-1");
  });

  test("--attach needs a terminal", async () => {
    const r = await runCli(["shell", "--attach", "s-1"], { tty: false });
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("needs a terminal");
  });
});

describe("colour", () => {
  test("off for non-TTY, off with NO_COLOR even on a TTY, on for a TTY", () => {
    expect(colorLevel(false, {})).toBe(0);
    expect(colorLevel(true, { NO_COLOR: "1" })).toBe(0);
    expect(colorLevel(true, {})).toBe(1);
    expect(colorLevel(false, { FORCE_COLOR: "1" })).toBe(1);
  });

  test("no escape codes reach a non-TTY", async () => {
    const r = await runCli(["--help"], { vars: { NO_COLOR: undefined } });
    expect(r.stdout).not.toContain("\x1b[");
  });
});
