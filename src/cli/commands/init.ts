// sbx init: write a starter Dockerfile (git, fish, Claude Code, the sbx user) into this repo
import type { Command } from "commander";
import { findRepoRoot } from "../../workspace/repo";
import { writeStarterDockerfile } from "../../workspace/init";
import type { Verb } from "../verb";

export const init: Verb = {
  name: "init",
  summary: "write a starter Dockerfile for sandboxes of this repo",
  declare(cmd: Command) {
    cmd.option("--repo <path>", "the git repo (default: the current one)").option("--force", "overwrite an existing Dockerfile");
  },
  async run(ctx, _args, opts) {
    const repo = await findRepoRoot(ctx.exec, ctx.cwd, opts.repo as string | undefined);
    const file = writeStarterDockerfile(repo, opts.force === true);
    ctx.render.out(`wrote ${file}; commit it, then: sbx create <name>`);
    return 0;
  },
};
