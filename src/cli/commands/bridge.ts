// sbx bridge: show or change what a sandbox's git and gh may do through the bridge beyond the default
import type { Command } from "commander";
import { SbxError } from "../../core/errors";
import { sandboxArgument } from "../completion/offers";
import type { Verb } from "../verb";

const collect = (v: string, prev: string[] = []) => [...prev, v];
/** core/bridge-settings.ts's BRIDGE_ALLOWS (not imported: it loads zod); a test keeps the two the same. */
export const ALLOWS = ["push-anywhere", "force-push", "delete", "ci-files", "gh-api", "gh-gist", "gh-write"];

export const bridge: Verb = {
  name: "bridge",
  summary: "show or change what a sandbox's git and gh may do with your forge token",
  declare(cmd: Command) {
    cmd
      .addArgument(sandboxArgument("<name>", "sandbox name"))
      .option("--repo <path>", "the repo the sandbox belongs to")
      .option("--allow <what>", `allow one more thing (${ALLOWS.join(", ")}); repeatable`, collect)
      .option("--disallow <what>", "take an allowance back; repeatable", collect)
      .option("--protect <branch>", "protect one more branch (* matches within a segment, e.g. 'release/*'); repeatable", collect)
      .option("--unprotect <branch>", "stop protecting a branch named with --protect; repeatable", collect)
      .option("--allow-push <branch>", "let it push to one more branch or tag outside its prefix (* within a segment); repeatable", collect)
      .option("--disallow-push <branch>", "take such a branch back; repeatable", collect)
      .option("--branch-prefix <prefix>", "where its own branches go (default sbx/<name>/; '' puts the default back)")
      .option("--allow-repo <url>", "send the token to one more repository (https URL) for clone/fetch/ls-remote; repeatable", collect)
      .option("--disallow-repo <url>", "take such a repository back; repeatable", collect)
      .option("--push-remote <remote>", "send every push to this remote of the repo (a fork) instead of the one named ('' sends them where named again)")
      .option("--json", "print JSON")
      .addHelpText(
        "after",
        [
          "",
          "The bridge uses your token only for this repo's own remotes. It pushes to branches and tags under the",
          "sandbox's prefix (sbx/<name>/, or --branch-prefix) without asking; a push anywhere else (main, a tag, a",
          "colleague's branch) is refused and waits in `sbx approvals` (and the dashboard): allowing it there adds",
          "that one branch, as --allow-push does. By default it also refuses:",
          "  force-push  a forced push (or --force-with-lease) to, or deleting, a protected branch: the remote's",
          "              default branch, main, master, and any named with --protect (in any letter case)",
          "  delete      deleting a branch or tag on the remote that this sandbox did not create",
          "  ci-files    commits changing CI or automation files (.github/workflows and actions, .gitea and .forgejo",
          "              workflows, .gitlab-ci.yml, bitbucket-pipelines.yml, .drone.yml, .woodpecker, .travis.yml,",
          "              appveyor.yml, .cirrus.yml, azure-pipelines.yml, Jenkinsfile, .circleci, .buildkite, Dependabot,",
          "              Renovate, .devcontainer, CODEOWNERS, …; in any letter case)",
          "  gh-api      `gh api`",
          "  gh-gist     `gh gist` (publishes files)",
          "  gh-write    gh changes to pull requests, issues and gists this sandbox did not open (close, edit,",
          "              comment, ready, reopen; a gist's edit or delete): each asks first in `sbx approvals`,",
          "              and allowing it there lets it change that one; what it opened it changes without asking",
          "  push-anywhere  (not a refusal: lifts the prefix rule altogether)",
          "Each refusal names the --allow that lifts it, for this sandbox only. Changes apply to the next command.",
          "The token goes only to this repo's own remotes; --allow-repo adds another repository: a clone, fetch or",
          "ls-remote of its URL, and gh -R OWNER/REPO, then carry the token (pushes go to this repo's remotes, by name).",
          "A branch it pushes runs the repo's `on: push` workflows with the repo's secrets (sbx doctor lists them; the",
          "first push says so): add `branches-ignore: ['sbx/**']` to them, or send its pushes to a fork with",
          "--push-remote (`gh pr create` then opens the pull request from the fork).",
          "",
          "Examples:",
          "  sbx bridge agent                          show what is allowed and protected",
          "  sbx bridge agent --allow ci-files         let it push workflow changes",
          "  sbx bridge agent --protect 'release/*'    no forced pushes to release branches either",
          "  sbx bridge agent --allow-push 'fix/*'     let it push fix/… branches without asking",
          "  sbx bridge agent --push-remote fork       its pushes go to your fork, not the upstream",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts) {
    const name = args[0] ?? "";
    const repoFlag = opts.repo as string | undefined;
    const list = (k: string) => ((opts[k] as string[] | undefined) ?? []);
    for (const k of ["allow", "disallow"]) {
      for (const v of list(k)) {
        if (!ALLOWS.includes(v)) throw new SbxError("usage", `--${k} ${v}: not something the bridge allows or refuses`, { hint: `One of: ${ALLOWS.join(", ")}.` });
      }
    }
    const { daemon, outOf, whereOf } = await import("../../client/sandboxes");
    const r = await (await daemon(ctx)).lifecycle(
      "bridge",
      { ...whereOf(ctx, repoFlag), name, allow: list("allow") as never, disallow: list("disallow") as never, protect: list("protect"), unprotect: list("unprotect"), addRepos: list("allowRepo"), dropRepos: list("disallowRepo"), pushTo: list("allowPush"), unpushTo: list("disallowPush"), ...(opts.branchPrefix !== undefined ? { prefix: String(opts.branchPrefix) } : {}), ...(opts.pushRemote !== undefined ? { pushRemote: String(opts.pushRemote) } : {}) },
      outOf(ctx),
    );
    if (opts.json) {
      ctx.render.json(r);
      return 0;
    }
    const allowed = r.settings.allow.length ? r.settings.allow.join(", ") : "nothing beyond the default";
    const protectedOnes = ["the default branch", "main", "master", ...r.settings.protect].join(", ");
    ctx.render.out(`${name}: allowed: ${allowed}`);
    ctx.render.out(`${name}: pushes without asking to: ${[`${r.settings.prefix ?? `sbx/${name}/`}…`, ...(r.settings.pushTo ?? [])].join(", ")}${r.settings.allow.includes("push-anywhere") ? " (and anywhere: push-anywhere)" : ""}`);
    ctx.render.out(`${name}: protected from forced pushes: ${protectedOnes}`);
    if (r.settings.pushRemote) ctx.render.out(`${name}: every push goes to: ${r.settings.pushRemote}`);
    if (r.settings.ghTargets.length) ctx.render.out(`${name}: gh may also change: ${r.settings.ghTargets.join(", ")}`);
    ctx.render.out(`${name}: the token goes to: this repo's remotes${r.settings.repos.length ? `, ${r.settings.repos.join(", ")}` : ""}${r.changed ? " (changed)" : ""}`);
    return 0;
  },
};
