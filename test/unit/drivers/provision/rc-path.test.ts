// A guest's bash rc, run by a real bash: the shims' dir first on PATH, the agent launchers' dir last, each once however
// often the rc is read.
import { describe, expect, test } from "bun:test";
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
