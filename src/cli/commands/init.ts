// sbx init: write a starter Dockerfile (git, fish, Claude Code, the sbx user) into this repo
import type { Command } from "commander";
import type { Verb } from "../verb";

export const init: Verb = {
  name: "init",
  summary: "write a starter Dockerfile for sandboxes of this repo",
  declare(cmd: Command) {
    cmd.option("--repo <path>", "the git repo (default: the current one)").option("--force", "overwrite an existing Dockerfile");
  },
  async run(ctx, _args, opts) {
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for them.
    const { findRepoRoot } = await import("../../workspace/repo");
    const { writeStarterDockerfile } = await import("../../workspace/init");
    const repo = await findRepoRoot(ctx.exec, ctx.cwd, opts.repo as string | undefined);
    const file = writeStarterDockerfile(repo, opts.force === true);
    ctx.render.out(`wrote ${file}; commit it, then: sbx create <name>`);
    return 0;
  },
};
