// A guest's rc (bash, zsh: macOS guests; fish), run by the real shell: the shims' dir first on PATH, the agent launchers' dir last, each once however
// often the rc is read.
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { renderShellRc } from "../../../../src/drivers/provision/provision";

describe("bash rc PATH", () => {
  test("shims first, agent launchers last, sourcing twice adds nothing", () => {
    const [, rc] = renderShellRc({ shell: "bash", binDir: "/home/g/bin", env: { A: "1" }, sandbox: "s", lastDir: "/var/lib/sbx/runtime/agents/bin" });
    const script = `PATH=/usr/bin:/bin\n${rc!.content}\n${rc!.content}\necho "$PATH"`;
    const r = Bun.spawnSync(["bash", "--norc", "--noprofile", "-c", script], { stdout: "pipe" });
    expect(r.stdout.toString().trim()).toBe("/home/g/bin:/usr/bin:/bin:/var/lib/sbx/runtime/agents/bin");
  });

  test("without a last dir, PATH gets the shims only", () => {
    const [, rc] = renderShellRc({ shell: "bash", binDir: "/home/g/bin", env: {}, sandbox: "s" });
    const r = Bun.spawnSync(["bash", "--norc", "--noprofile", "-c", `PATH=/usr/bin:/bin\n${rc!.content}\necho "$PATH"`], { stdout: "pipe" });
    expect(r.stdout.toString().trim()).toBe("/home/g/bin:/usr/bin:/bin");
  });
});

const have = (sh: string) => Bun.spawnSync(["sh", "-c", `command -v ${sh}`]).exitCode === 0;

describe.skipIf(!have("zsh"))(`zsh rc PATH (the macOS guests' shell)${have("zsh") ? "" : " (skipped: no zsh here; install.sh installs it)"}`, () => {
  test("shims first, agent launchers last, .zshenv then .zprofile (path_helper's reorder between) adds nothing twice", () => {
    const files = renderShellRc({ shell: "zsh", binDir: "/Users/g/bin", env: { A: "1" }, sandbox: "s", lastDir: "/private/var/sbx/alice/agents/bin" });
    const [zshenv, zprofile] = [files[0]!.content, files[1]!.content];
    const script = `PATH=/usr/bin:/bin\n${zshenv}\nPATH=/usr/local/bin:/usr/bin:/bin:/Users/g/bin:/private/var/sbx/alice/agents/bin\n${zprofile}\necho "$PATH"`;
    const r = Bun.spawnSync(["zsh", "-f", "-c", script], { stdout: "pipe" });
    expect(r.stdout.toString().trim()).toBe("/Users/g/bin:/usr/local/bin:/usr/bin:/bin:/private/var/sbx/alice/agents/bin");
  });
});

describe.skipIf(!have("fish"))(`fish rc PATH${have("fish") ? "" : " (skipped: no fish here)"}`, () => {
  test("shims first, agent launchers last (fish_add_path takes dirs that exist: these do)", () => {
    const d = mkdtempSync(join(tmpdir(), "sbx-fish-rc-"));
    try {
      for (const x of ["bin", "agents"]) mkdirSync(join(d, x));
      const [conf] = renderShellRc({ shell: "fish", binDir: join(d, "bin"), env: {}, sandbox: "s", lastDir: join(d, "agents") });
      writeFileSync(join(d, "sbx.fish"), conf!.content);
      const r = Bun.spawnSync(["fish", "--no-config", "-c", `set -gx PATH /usr/bin /bin; source ${d}/sbx.fish; source ${d}/sbx.fish; string join : $PATH`], { stdout: "pipe", env: { HOME: d, PATH: "/usr/bin:/bin" } });
      expect(r.stdout.toString().trim()).toBe(`${d}/bin:/usr/bin:/bin:${d}/agents`);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
