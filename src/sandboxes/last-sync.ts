// The last clone → host sync of a sandbox (stop, rm) and the commits only it holds (rm's refusal, `sbx list`).
import { existsSync, writeFileSync } from "node:fs";
import { SbxError } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import type { Driver } from "../drivers/driver";
import { upstreamTips } from "../bridge/gate";
import { importSandbox } from "../sync/import";
import { hostGitEnv, HOST_GIT_SAFE } from "../sync/git-argv";
import type { Exec } from "../sys/exec";
import { parseCommits, sandboxRemote, type Commit } from "../workspace/clone";
import { sandboxLayout } from "../workspace/layout";
import type { ServiceContext } from "./context";

/**
 * The clone → host sync into `refs/remotes/sandbox-<name>/*`: the sandbox's own git lists and packs, the host
 * verifies into the sandbox's store (importSandbox; never git in the clone on the host). A sandbox nothing can run as
 * (its container and account gone) is an error: what it held cannot be told. Then `<dir>/.synced` says the host has
 * everything of it (prune reads that, never the clone).
 */
export async function lastFetch(c: ServiceContext, row: Sandbox, driver: Driver, audit: boolean): Promise<void> {
  const spec = driver.spec(row);
  const git = await driver.sandboxGit(spec, "read", null);
  if (!git) {
    if (!existsSync(driver.workspace(spec))) return;
    throw new SbxError("unavailable", `nothing can run as sandbox ${row.name} to read its clone`, {
      hint: "Its container or account is gone. `sbx rm --force` it: what the host already took from it stays as sandbox-NAME/*.",
    });
  }
  const remote = sandboxRemote(row.name);
  try {
    const r = await importSandbox({ repo: row.repo, name: row.name, sandboxGit: git, exec: driver.hostExec(spec) });
    if (audit && r.changed) c.d.store.audit({ sandboxId: row.id, kind: "ref-sync", action: "ref-sync.synced", detail: { remote, direction: "clone-to-host", final: true, packBytes: r.packBytes } });
  } catch (e) {
    if (audit) c.d.store.audit({ sandboxId: row.id, kind: "ref-sync", action: "ref-sync.error", detail: { remote, direction: "clone-to-host", final: true, error: (e as Error).message } });
    throw e;
  }
  if (existsSync(spec.dir)) writeFileSync(sandboxLayout(spec.dir).synced, `${new Date().toISOString()}\n`);
}

/**
 * Commits the sandbox holds that exist nowhere else on the host: synced first (a stopped sandbox only when asked:
 * nothing runs in it, and its last stop synced it), then those under `refs/remotes/sandbox-<name>/` that no other
 * host ref has. The daemon's ref sync moves the same refs, so a failed sync is tried again a few times before it counts.
 * runs (as the host user): git … -C <repo> log --format=%H%x09%s --remotes=sandbox-<name> --not --exclude=refs/remotes/sandbox-* --all
 */
export async function unsynced(c: ServiceContext, row: Sandbox, driver: Driver, audit: boolean, stoppedToo = true): Promise<Commit[]> {
  const spec = driver.spec(row);
  const running = stoppedToo || (await driver.inspect(spec).catch(() => null))?.phase === "running";
  for (let attempt = 1; running; attempt++) {
    try {
      await lastFetch(c, row, driver, audit);
      break;
    } catch (e) {
      if (attempt >= 4 || (e instanceof SbxError && (e.code === "conflict" || e.code === "unavailable"))) throw e;
      await Bun.sleep(40 * attempt);
    }
  }
  const host = driver.hostExec(spec);
  return onlyHere(c, host, row.repo, row.name, sandboxLayout(spec.dir).gate);
}

/**
 * The commits of `sandbox-<name>/*` in the host repo that exist nowhere else: on no other host ref, and not on the
 * upstream as the sandbox's bridge saw it (pushed, or fetched; the gate's `refs/remotes/*`).
 * runs (as the host user): git … -C <repo> log --format=%H%x09%s --remotes=sandbox-<name> --not --exclude=refs/remotes/sandbox-* --all <upstream tips>
 */
async function onlyHere(c: ServiceContext, host: Exec, repo: string, name: string, gateDir: string): Promise<Commit[]> {
  const upstream = await upstreamTips({ gate: c.d.exec, host }, gateDir, repo).catch(() => []);
  const r = await host.run(
    ["git", ...HOST_GIT_SAFE, "-C", repo, "log", "--format=%H%x09%s", `--remotes=${sandboxRemote(name)}`, "--not", "--exclude=refs/remotes/sandbox-*", "--all", ...upstream],
    { env: hostGitEnv(), replaceEnv: true },
  );
  return parseCommits(r.stdout);
}
