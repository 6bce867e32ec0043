// Pure git argv for macOS host → clone ref sync: the host-side fetch that keeps the host-owned mirror current.
import { HOST_GIT_SAFE } from "../../sync/git-argv";
import { BIN } from "./bin";

/**
 * Host → mirror. Runs IN THE MIRROR (host-owned, guests may only read it) and fetches the host repo's branches from
 * its path, so the guest's clone can reach their objects through its alternates. Never `--prune` and never gc: a
 * guest's clone may hold commits whose objects only the mirror has (a host branch deleted or rebased later), and
 * pruning them would corrupt that clone. Only the file transport; no tags, submodules, FETCH_HEAD or maintenance.
 * runs: git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c protocol.allow=never -c protocol.file.allow=always
 *       -c gc.auto=0 -c fetch.writeCommitGraph=false -c fetch.recurseSubmodules=false -C <mirror> fetch --quiet
 *       --no-tags --no-recurse-submodules --no-auto-gc --no-auto-maintenance --no-write-fetch-head -- <host repo> +refs/heads/*:refs/heads/*
 */
export function mirrorFetchArgv(args: { hostRepo: string; mirror: string }): string[] {
  for (const p of [args.hostRepo, args.mirror]) if (!p.startsWith("/")) throw new Error(`mirror fetch: ${p} is not an absolute path`);
  return [
    BIN.git,
    ...HOST_GIT_SAFE,
    "-c", "protocol.allow=never",
    "-c", "protocol.file.allow=always",
    "-c", "gc.auto=0",
    "-c", "fetch.writeCommitGraph=false",
    "-c", "fetch.recurseSubmodules=false",
    "-C", args.mirror,
    "fetch",
    "--quiet",
    "--no-tags",
    "--no-recurse-submodules",
    "--no-auto-gc",
    "--no-auto-maintenance",
    "--no-write-fetch-head",
    "--",
    args.hostRepo,
    "+refs/heads/*:refs/heads/*",
  ];
}
