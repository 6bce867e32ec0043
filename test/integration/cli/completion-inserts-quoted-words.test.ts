// A completed word is inserted quoted: no shell runs, expands or splits what a sandbox name holds. sbx's validator
// allows none of the characters a shell interprets (test/unit/core/names.test.ts), and `sbx __complete names` drops any
// name it would refuse (test/unit/client/names.test.ts); the scripts quote all the same. Here an `sbx` on PATH answers
// hostile names, each shell inserts one at a TAB on a real PTY, and the inserted line, run by that shell, passes the
// name through unchanged and runs nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../support/cli";
import { ShellSession, type ShellName } from "../../support/shell-session";

const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-completion-quoting-")));
const pwned = join(root, "pwned");
const namesFile = join(root, "names");
const env: Record<string, string> = {
  HOME: join(root, "home"),
  PATH: `${join(root, "bin")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
  NO_COLOR: "1",
};

/** Names no sbx would make, each inserted alone (the only candidate), so TAB inserts it whole. */
const HOSTILE = [
  `$(touch ${pwned}) \`touch ${pwned}\`;touch ${pwned}|x&&y 'q' "d" *?[a] {a,b} !! #c \\e`,
  `~/$HOME>${pwned}`,
];

beforeAll(() => {
  mkdirSync(env.HOME!, { recursive: true });
  mkdirSync(join(root, "bin"));
  // The stand-in answers `sbx __complete names` with the names in the file, one a line, as sbx does.
  writeFileSync(join(root, "bin", "sbx"), `#!/bin/sh\n[ "$1 $2" = "__complete names" ] && cat '${namesFile}'\nexit 0\n`);
  chmodSync(join(root, "bin", "sbx"), 0o755);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** What `shell` makes of `words` as a command line's arguments: one line per argument. */
async function argsAsParsed(shell: ShellName, words: string): Promise<string[]> {
  const p = Bun.spawn(shell === "fish" ? ["fish", "--no-config", "-c", `printf '%s\\n' ${words}`] : [shell, "-c", `printf '%s\\n' ${words}`], {
    cwd: root,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  expect(code).toBe(0);
  return out.split("\n").slice(0, -1);
}

for (const shell of ["bash", "zsh", "fish"] as const) {
  const has = Bun.which(shell) !== null;
  describe.skipIf(!has)(`${shell} inserts a completed name quoted${has ? "" : ` (skipped: ${shell} is not installed)`}`, () => {
    let sh: ShellSession;
    beforeAll(async () => {
      const { code, stdout } = await runCli(["completion", shell]);
      expect(code).toBe(0);
      const dir = join(root, shell);
      mkdirSync(dir);
      sh = await ShellSession.start({ shell, script: stdout, dir, env, cwd: root });
    });
    afterAll(() => sh?.close());

    for (const [i, name] of HOSTILE.entries()) {
      // fish escapes every character it inserts but a leading ~ (it would expand it): the script does not offer such a word.
      if (shell === "fish" && name.startsWith("~")) {
        test(`hostile name ${i + 1}: not offered (fish would expand its leading ~)`, async () => {
          writeFileSync(namesFile, `${name}\n`);
          expect((await sh.line("sbx shell \t")).line).toBe("sbx shell ");
        });
        continue;
      }
      test(`hostile name ${i + 1}: inserted escaped, read back as itself, nothing run`, async () => {
        writeFileSync(namesFile, `${name}\n`);
        const { line } = await sh.line("sbx shell \t");
        expect(line.startsWith("sbx shell ")).toBe(true);
        const inserted = line.slice("sbx shell ".length);
        expect(inserted.trimEnd()).not.toBe(name);
        expect(await argsAsParsed(shell, inserted)).toEqual([name]);
        expect(existsSync(pwned)).toBe(false);
      });
    }
  });
}
