// sbx init: write a starter Dockerfile (git, fish, Claude Code, the sbx user) into this repo, or one FROM a local image
import type { Command } from "commander";
import type { Verb } from "../verb";

/** sbx's offline base image (install.sh and scripts/base-image.sh build it with debootstrap: no registry). */
const OFFLINE_BASE = "sbx-base:bookworm";

export const init: Verb = {
  name: "init",
  summary: "write a starter Dockerfile for sandboxes of this repo",
  declare(cmd: Command) {
    cmd
      .option("--repo <path>", "the git repo (default: the current one)")
      .option("--force", "overwrite an existing Dockerfile")
      .option("--from <image>", `a Dockerfile of this image as it is, no package steps (e.g. ${OFFLINE_BASE}, the offline base image: no registry needed)`)
      .addHelpText(
        "after",
        [
          "",
          "The starter builds FROM debian:bookworm-slim with git, fish and Claude Code: its build needs a registry and the",
          `network. On a machine with neither, \`sbx init --from ${OFFLINE_BASE}\` (install.sh builds that image) builds offline.`,
        ].join("\n"),
      );
  },
  async run(ctx, _args, opts) {
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for them.
    const { findRepoRoot } = await import("../../workspace/repo");
    const { writeStarterDockerfile } = await import("../../workspace/init");
    const repo = await findRepoRoot(ctx.exec, ctx.cwd, opts.repo as string | undefined);
    const from = typeof opts.from === "string" ? opts.from : undefined;
    if (from !== undefined) {
      const { SbxError } = await import("../../core/errors");
      // sbx pulls nothing: the image must be here (a build would otherwise try a registry).
      const there = await ctx.exec.run(["docker", "image", "inspect", "--format", "{{.Id}}", from], { check: false }).catch(() => null);
      if (there?.exitCode !== 0) {
        throw new SbxError("config", `image ${from} is not on this machine (sbx pulls nothing)`, { hint: `Build or \`docker load\` it first${from === OFFLINE_BASE ? " (sudo ./scripts/base-image.sh builds it, with no registry)" : ""}, or leave out --from.` });
      }
    }
    const file = writeStarterDockerfile(repo, opts.force === true, from);
    ctx.render.out(`wrote ${file}; commit it, then: sbx create <name>`);
    if (from === undefined) {
      // Where a build cannot pull, say so now rather than at the create: this machine has the offline image.
      const offline = await ctx.exec.run(["docker", "image", "inspect", "--format", "{{.Id}}", OFFLINE_BASE], { check: false }).catch(() => null);
      if (offline?.exitCode === 0) {
        ctx.render.info(`note: it builds FROM debian:bookworm-slim and installs packages, which needs a registry and the network; without them, \`sbx init --force --from ${OFFLINE_BASE}\` builds from the offline base image on this machine`);
      }
    }
    return 0;
  },
};
