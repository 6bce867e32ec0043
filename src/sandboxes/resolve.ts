// The one resolver of a sandbox's name, for every route that names one (lifecycle, sessions, policy, logs, bridge).
import { sandboxAmbiguous, sandboxNotFound } from "../core/errors";
import { validateSandboxName } from "../core/names";
import type { Sandbox } from "../core/schemas";
import type { Store } from "../store/store";

/** Where the caller stands: its cwd and --repo (the repo around them is found with git), or the repo itself. */
export interface SandboxQuery {
  cwd?: string | undefined;
  /** --repo as the person typed it (relative to cwd): that repo's sandbox, or none. */
  repoFlag?: string | undefined;
  /** The person sbx runs as root for (sudo's SUDO_UID): the repo is found by git run as them. */
  asUid?: number | undefined;
  /** The repo itself (a real path the caller already holds, e.g. the row a start answered): that repo's, or none. */
  repo?: string | undefined;
  /** The repo of cwd and --repo as the caller found it without git (the quick path): saves the daemon a git run. */
  foundRepo?: string | undefined;
}

/**
 * The sandbox a name means: the one of that name in the caller's repo (the repo it names, or the one around its cwd);
 * else, when the caller named no repo, the one sandbox of that name there is in any repo. Two of that name elsewhere
 * is a usage error that names --repo; none, the one not-found error. `repoOf` finds the repo around a cwd (git), and
 * throws when there is none.
 */
export async function resolveSandbox(store: Pick<Store, "findSandbox" | "listSandboxes">, repoOf: (q: SandboxQuery & { cwd: string }) => Promise<string>, name: string, q: SandboxQuery): Promise<Sandbox> {
  validateSandboxName(name);
  const named = q.repo !== undefined || q.repoFlag !== undefined;
  let repo: string | null = q.repo ?? q.foundRepo ?? null;
  if (repo === null && q.cwd !== undefined) {
    try {
      repo = await repoOf({ ...q, cwd: q.cwd });
    } catch (e) {
      if (named) throw e; // a --repo that is no repo says so
    }
  }
  const here = repo === null ? null : store.findSandbox(repo, name);
  if (here) return here;
  if (!named) {
    const all = store.listSandboxes().filter((s) => s.name === name);
    if (all.length === 1) return all[0]!;
    if (all.length > 1) throw sandboxAmbiguous(name, all.map((s) => s.repo));
  }
  throw sandboxNotFound(name, repo, !named);
}
