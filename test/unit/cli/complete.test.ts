// sbx __complete (hidden) answers the completion scripts: this repo's sandbox names from the running daemon, and
// nothing, with exit 0, whenever it cannot tell.
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../support/cli";
import { serveInprocDaemon } from "../../support/inproc-daemon";
import { FakeExec } from "../../fakes/exec";

describe("sbx __complete", () => {
  test("is hidden from sbx --help", async () => {
    const r = await runCli(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain("__complete");
  });

  test("names: this repo's sandbox names from the running daemon, one a line", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-complete-")));
    const vars = { HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), XDG_RUNTIME_DIR: join(root, "run"), XDG_CACHE_HOME: join(root, "cache"), XDG_CONFIG_HOME: join(root, "config") };
    const repo = join(root, "repo");
    mkdirSync(join(repo, ".git"), { recursive: true });
    writeFileSync(join(repo, ".git", "HEAD"), "ref: refs/heads/main\n");
    const daemon = serveInprocDaemon(vars, new FakeExec());
    try {
      daemon.store.createSandbox({ name: "web", repo, backend: "fake" });
      daemon.store.createSandbox({ name: "api", repo, backend: "fake" });
      expect(await runCli(["__complete", "names"], { vars, cwd: repo })).toEqual({ code: 0, stdout: "api\nweb\n", stderr: "" });
      expect(await runCli(["__complete", "names", "--repo", repo], { vars, cwd: root })).toEqual({ code: 0, stdout: "api\nweb\n", stderr: "" });
      expect(await runCli(["__complete", "names"], { vars, cwd: root })).toEqual({ code: 0, stdout: "", stderr: "" });
    } finally {
      await daemon.stop();
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("prints nothing and exits 0 when it cannot tell: no daemon, no HOME, a word it does not know", async () => {
    const nobody = { XDG_RUNTIME_DIR: join(tmpdir(), "sbx-complete-nobody") };
    expect(await runCli(["__complete", "names"], { vars: nobody })).toEqual({ code: 0, stdout: "", stderr: "" });
    expect(await runCli(["__complete", "names"], { vars: { HOME: undefined } })).toEqual({ code: 0, stdout: "", stderr: "" });
    expect(await runCli(["__complete", "sessions"], { vars: nobody })).toEqual({ code: 0, stdout: "", stderr: "" });
  });
});
