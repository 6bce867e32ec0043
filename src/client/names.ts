// This repo's sandbox names for shell completion, from the daemon if one runs: none is started, no zod, no git.
import { NAME_MAX, NAME_PATTERN } from "../core/names";
import type { Paths } from "../sys/paths";
import { findRepoRootQuick } from "../workspace/repo";

/**
 * Pure: the names in an answer to GET /v1/sandboxes that belong to `repo` and are not deleted, sorted, each once. A name
 * the validator would refuse is left out: a completed word never carries more than `[a-z0-9-]`.
 */
export function namesIn(json: unknown, repo: string): string[] {
  const list = (json as { sandboxes?: unknown } | null)?.sandboxes;
  if (!Array.isArray(list)) return [];
  const names = new Set<string>();
  for (const s of list as { name?: unknown; repo?: unknown; state?: unknown }[]) {
    if (s?.repo !== repo || s.state === "deleted" || typeof s.name !== "string") continue;
    if (s.name.length <= NAME_MAX && NAME_PATTERN.test(s.name)) names.add(s.name);
  }
  return [...names].sort();
}

export interface NamesWhere {
  cwd: string;
  repoFlag?: string | undefined;
  /** The environment (GIT_DIR and the like decide whether the repo can be found without git). */
  vars: Readonly<Record<string, string | undefined>>;
}

/**
 * The sandbox names of the repo around `cwd` (or `--repo`), or none when that cannot be told at once: no repo found
 * without running git, no daemon listening (none is started), an answer that is not the list, or none within `timeoutMs`.
 * API: GET /v1/sandboxes (control socket)
 */
export async function sandboxNamesHere(paths: Pick<Paths, "controlSocket">, where: NamesWhere, timeoutMs = 1000): Promise<string[]> {
  return (await sandboxNamesOrNull(paths, where, timeoutMs)) ?? [];
}

/** As sandboxNamesHere, but null when they cannot be told at once (no repo found without git, no daemon, no list). */
export async function sandboxNamesOrNull(paths: Pick<Paths, "controlSocket">, where: NamesWhere, timeoutMs = 1000): Promise<string[] | null> {
  const repo = findRepoRootQuick(where.cwd, where.repoFlag, where.vars);
  if (repo === null) return null;
  try {
    const res = await fetch("http://sbx/v1/sandboxes", { unix: paths.controlSocket, signal: AbortSignal.timeout(timeoutMs) } as RequestInit);
    if (!res.ok) return null;
    const json = await res.json();
    if (!Array.isArray((json as { sandboxes?: unknown } | null)?.sandboxes)) return null;
    return namesIn(json, repo);
  } catch {
    return null;
  }
}
