// sbx completion SHELL prints the script for bash, zsh or fish; its --help gives the rc line for each.
import { describe, expect, test } from "bun:test";
import { runCli } from "../../support/cli";

describe("sbx completion", () => {
  test("prints each shell's script, registered for sbx", async () => {
    const want = { bash: "complete -F _sbx sbx", zsh: "compdef _sbx sbx", fish: "complete -c sbx -f -a '(__sbx_complete)'" };
    for (const [shell, line] of Object.entries(want)) {
      const r = await runCli(["completion", shell]);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(r.stdout).toContain(line);
      expect(r.stdout).toContain("'rebuild'");
    }
  });

  test("--help names the one line to add to each shell's startup file", async () => {
    const r = await runCli(["completion", "--help"]);
    expect(r.code).toBe(0);
    for (const line of ["source <(sbx completion bash)", "source <(sbx completion zsh)", "sbx completion fish | source", "~/.bashrc", "~/.zshrc", "config.fish"]) {
      expect(r.stdout).toContain(line);
    }
  });

  test("is listed in sbx --help", async () => {
    expect((await runCli(["--help"])).stdout).toMatch(/^ {2}completion <shell> /m);
  });

  test("another shell is a usage error that lists the three", async () => {
    const r = await runCli(["completion", "tcsh"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("bash, zsh, fish");
  });
});
