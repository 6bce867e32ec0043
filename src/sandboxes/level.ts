// A sandbox's policy level (core/levels.ts), kept in its identity: set at create (`--policy`, the config's `policy`),
// shown and changed by `sbx policy show|set`. What `balanced` needs of the repo is read here, from the host repo (the
// person's own: never a sandbox's clone), as the host user, through git (files it tracks, its remotes).
import { SbxError } from "../core/errors";
import { forgesOf, LEVELS, levelOf, npmrcRegistryHosts, NO_FACTS, REGISTRY_PATHSPECS, registriesOf, type LevelName, type LevelSetting, type RepoFacts } from "../core/levels";
import type { Exec } from "../sys/exec";
import { HOST_GIT_SAFE, hostGitEnv } from "../sync/git-argv";
import { hostGitSetup } from "../workspace/clone";
import type { ServiceContext } from "./context";
import type { Named } from "./requests";

/** Tracked files `balanced` looks at, at most (a repo with more package files than this is read no further). */
const FILES_MAX = 5_000;

/**
 * What `balanced` allows for the host repo: the registries its tracked package files name, the hosts its committed
 * root .npmrc names, the forges of its remotes. Nothing read can widen past a host name (core/levels.ts drops
 * addresses), and what cannot be read is said, never guessed.
 * runs (as the host user): git -C <repo> ls-files -z -- <package files>; git -C <repo> cat-file blob HEAD:.npmrc;
 *       git -C <repo> config --get-regexp …
 */
export async function repoFacts(exec: Exec, repo: string, note: (line: string) => void = () => undefined): Promise<RepoFacts> {
  const git = (args: string[]) => exec.run(["git", ...HOST_GIT_SAFE, "-C", repo, ...args], { env: hostGitEnv(), replaceEnv: true, check: false });
  const listed = await git(["ls-files", "-z", "--", ...REGISTRY_PATHSPECS]);
  if (listed.exitCode !== 0) note(`the policy level could not list ${repo}'s files (${listed.stderr.trim().split("\n")[0] ?? "git failed"}): no package registry is allowed for it`);
  const files = listed.exitCode === 0 ? listed.stdout.split("\0").filter(Boolean).slice(0, FILES_MAX) : [];
  let registryHosts: RepoFacts["registryHosts"] = [];
  if (files.includes(".npmrc")) {
    const rc = await git(["cat-file", "blob", "HEAD:.npmrc"]);
    if (rc.exitCode === 0) registryHosts = npmrcRegistryHosts(rc.stdout.slice(0, 64 * 1024)).map((host) => ({ host, file: ".npmrc" }));
  }
  const setup = await hostGitSetup(exec, repo).catch(() => ({ remotes: {} }));
  return { registries: registriesOf(files), registryHosts, forges: forgesOf(setup.remotes) };
}

/** The setting a level is stored as: `balanced` with what it read of the repo, the others with nothing. */
export async function levelSetting(exec: Exec, repo: string, level: LevelName, now: number, note?: (line: string) => void): Promise<LevelSetting> {
  return { level, repo: level === "balanced" ? await repoFacts(exec, repo, note) : NO_FACTS, at: now };
}

/** A sandbox's level as `sbx policy show|set` reads it, with the identity it was read from. */
export interface LevelReport {
  name: string;
  sandboxId: number;
  /** null: no level (the built-in list). */
  setting: LevelSetting | null;
  changed: boolean;
  identity: Record<string, unknown>;
}

/**
 * `sbx policy show NAME` and `sbx policy set NAME --level L`: the sandbox's level (null: none, the built-in list), or
 * a new one stored in its identity, where the proxy reads it at the next request (no restart). Setting `balanced` again
 * reads the repo again (a registry added since).
 */
export async function sandboxLevel(c: ServiceContext, name: string, w: Named & { level?: LevelName }): Promise<LevelReport> {
  const { repo, row, driver } = await c.locate(name, w);
  if (w.level === undefined) return { name, sandboxId: row.id, setting: levelOf(row.identity), changed: false, identity: row.identity };
  if (!Object.hasOwn(LEVELS, w.level)) throw new SbxError("usage", `not a level: ${w.level}`, { hint: `Levels: ${Object.keys(LEVELS).join(", ")}.` });
  const setting = await levelSetting(driver.hostExec(driver.spec(row)), repo, w.level, Date.now(), (l) => c.outOf(w.out).log(l));
  return c.d.store.write(() => {
    const fresh = c.d.store.getSandbox(row.id) ?? row;
    const before = levelOf(fresh.identity);
    const changed = JSON.stringify({ ...before, at: 0 }) !== JSON.stringify({ ...setting, at: 0 });
    const identity = { ...fresh.identity, policy: setting };
    if (changed) {
      c.d.store.updateIdentity(row.id, identity);
      c.d.store.audit({ sandboxId: row.id, kind: "allowlist", action: "level", detail: { name, level: setting.level, from: before?.level ?? null, repo: setting.repo } });
    }
    return { name, sandboxId: row.id, setting, changed, identity: changed ? identity : fresh.identity };
  });
}
