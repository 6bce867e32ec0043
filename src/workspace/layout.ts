// The sandbox dir's layout: the clone, the symlink to the host repo its alternates go through, overlay dirs.
import { join } from "node:path";

export interface SandboxLayout {
  /** The shared clone; mounted inside at the host repo's own path. */
  clone: string;
  /** Symlink to the host repo; inside, only the host's `.git/objects` is mounted, read-only, at `<link>/.git/objects`. */
  link: string;
  linkGit: string;
  /** Upper/work dirs of overlay volumes. */
  overlays: string;
  /** sbx's read-only login-shell snippets (shims first on PATH), mounted into /etc/profile.d and /etc/fish/conf.d. */
  shProfile: string;
  fishProfile: string;
  /** An empty file mounted read-only over ~/.claude/.credentials.json in `--claude-auth inject` mode. */
  credentialsMask: string;
  /** An empty file mounted read-only over the host objects' `info/alternates` (the stores of other sandboxes). */
  alternatesMask: string;
  /** Present while a create is in progress; a dir that still has it after its creator died is prune's to remove. */
  creating: string;
  /** Written by the last clone → host sync of a stop or rm: the host has everything the clone held. */
  synced: string;
  /** Present once the sandbox's current container has its home seeded; removed before a container is made. */
  seeded: string;
  /** The bridge's gate repo: in the sandbox dir, beside (never inside) what is mounted into the sandbox. */
  gate: string;
}

export function sandboxLayout(dir: string): SandboxLayout {
  return {
    clone: join(dir, "clone"),
    link: join(dir, "repo"),
    linkGit: join(dir, "repo", ".git"),
    overlays: join(dir, "overlay"),
    shProfile: join(dir, "etc", "sbx-shims.sh"),
    fishProfile: join(dir, "etc", "sbx-shims.fish"),
    credentialsMask: join(dir, "etc", "claude-credentials.masked"),
    alternatesMask: join(dir, "etc", "alternates.masked"),
    creating: join(dir, ".creating"),
    seeded: join(dir, ".seeded"),
    synced: join(dir, ".synced"),
    gate: join(dir, "gate"),
  };
}
