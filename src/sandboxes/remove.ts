// Removing sandboxes: `sbx rm` (refused while it holds commits found nowhere else), the teardown a failed or
// interrupted create uses too, and `sbx prune` (what no live sandbox owns).
import { existsSync, readdirSync, readlinkSync, rmSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import type { SandboxSpec } from "../core/spec";
import { unsyncedCommits, unsyncedUnknown } from "../core/errors";
import type { BackendKind, Sandbox } from "../core/schemas";
import type { Driver } from "../drivers/driver";
import { baseIdentity, sandboxId } from "../drivers/identity";
import { lockHeld, lockPath, staleLocks } from "../workspace/lock";
import { retireSandboxRemote } from "../sync/retired-refs";
import { retireStore } from "../sync/store";
import { sandboxSockets } from "../sys/paths";
import { sandboxRemote, sandboxRemoteUrl, staleConfigLock, type Commit } from "../workspace/clone";
import { sandboxLayout } from "../workspace/layout";
import { deadStagingDirs } from "../workspace/staged-clone";
import type { ServiceContext } from "./context";
import { lastFetch, unsynced } from "./last-sync";
import type { IfSessions, Named, Output, PruneReport } from "./requests";

/**
 * Removes a sandbox: refuses (exit 65) while it holds commits that exist nowhere else on the host, unless `force`;
 * then stops it, syncs once more, lets the daemon go and removes everything of it. The host keeps
 * `refs/remotes/sandbox-<name>/*`.
 */
export async function rmSandbox(c: ServiceContext, name: string, w: Named & { force?: boolean; ifSessions?: IfSessions }): Promise<{ lost: Commit[]; sessions: number }> {
  const { repo, row, driver } = await c.locate(name, w);
  const lock = await c.lockLive(row, w.out);
  try {
    let lost: Commit[] = [];
    try {
      lost = await unsynced(c, row, driver, true);
    } catch (e) {
      if (!w.force) throw unsyncedUnknown(name, (e as Error).message);
    }
    if (lost.length > 0 && !w.force) throw unsyncedCommits(name, lost);
    c.refuseSessions(row, "rm", w.ifSessions);
    // Stopped first (sandbox, then guards), so nothing is committed after the last sync.
    const { sessions } = await c.running.halt(c.fresh(row), driver, `sandbox ${name} is being removed (sbx rm)`);
    try {
      await lastFetch(c, row, driver, true);
    } catch (e) {
      if (!w.force) throw e;
      c.outOf(w.out).log(`warning: the last sync from sandbox ${name} failed (${(e as Error).message}); removing anyway (--force)`);
    }
    await teardown(c, name, repo, driver.spec(row).dir, row);
    c.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "rm", detail: { name, repo, backend: row.backend, force: w.force === true, lost: lost.length, sessions } });
    return { lost, sessions };
  } finally {
    lock.release();
  }
}

/**
 * Removes everything of one sandbox, whatever state it is in, in an order a crash can resume: the daemon's hold, the
 * row, what the driver made, the sandbox's store (what host refs reach of it copied into the host's objects first;
 * `sandbox-<name>/*` stays), a `sandbox-<name>` remote an older sbx added, the dirs. Idempotent. A
 * sandbox with no readable row is removed as the default kind would have made it; prune finds anything else.
 */
export async function teardown(c: ServiceContext, name: string, repo: string, dir: string, row: Sandbox | null): Promise<void> {
  if (row) await c.running.release(row).catch(() => undefined);
  if (row && row.state !== "deleted") c.d.store.setSandboxState(row.id, "deleted");
  const id = (row && baseIdentity(row)?.id) || sandboxId(c.d.paths.sandboxRoot, repo, name);
  const driver = await c.driver(row?.backend ?? c.d.defaultKind).catch(() => null);
  let spec: SandboxSpec | null = null;
  if (driver) {
    const shape: Sandbox = row ?? { id: -1, name, repo, backend: driver.kind, state: "deleted", identity: {}, createdAt: 0, updatedAt: 0, lastUsedAt: null };
    try {
      spec = driver.spec({ ...shape, identity: { ...shape.identity, id, dir } });
    } catch {
      spec = null; // unreadable for this kind: prune's cleanup finds what it made by label or name
    }
  }
  if (driver && spec) {
    await driver.remove(spec);
    if (existsSync(join(repo, ".git"))) {
      // What the host keeps of it (sandbox-<name>/*, and whatever the person merged) becomes the host's own objects
      // before its store goes.
      await retireStore({ exec: driver.hostExec(spec), repo }, name);
      // A sandbox made before stores had a `sandbox-<name>` remote in the repo's config: its section goes, its refs stay.
      const url = await sandboxRemoteUrl(driver.hostExec(spec), repo, name).catch(() => null);
      if (url !== null && url === driver.workspace(spec)) await retireSandboxRemote(driver.hostExec(spec), repo, sandboxRemote(name)).catch(() => false);
    }
  }
  rmSync(dir, { recursive: true, force: true });
  rmSync(sandboxSockets(c.d.paths, id).dir, { recursive: true, force: true });
}

/** Every sandbox dir on disk: `<sandboxRoot>/<repo>-<hash>/<name>`. */
function sandboxDirs(c: ServiceContext): string[] {
  const root = c.d.paths.sandboxRoot;
  const out: string[] = [];
  let repos: string[] = [];
  try {
    repos = readdirSync(root);
  } catch {
    return out;
  }
  for (const r of repos) {
    const rd = join(root, r);
    try {
      if (!statSync(rd).isDirectory()) continue;
      for (const n of readdirSync(rd)) if (statSync(join(rd, n)).isDirectory()) out.push(join(rd, n));
    } catch {
      /* vanished */
    }
  }
  return out;
}

/**
 * Removes what no live sandbox owns: sandbox dirs with no live row, half-made sandboxes whose creator died, what each
 * driver finds of sbx's that no live sandbox holds (containers, volumes, accounts, firewall rules), stale locks and
 * staged clones. Dirs whose clone holds unsynced commits are kept. A kind this process cannot reach is said, not skipped silently.
 */
export async function pruneSandboxes(c: ServiceContext, opts: { dryRun?: boolean; out?: Output } = {}): Promise<PruneReport> {
  const dry = opts.dryRun === true;
  const removed: string[] = [];
  const kept: string[] = [];
  for (const dir of sandboxDirs(c)) {
    const lay = sandboxLayout(dir);
    const name = basename(dir);
    let repo: string;
    try {
      repo = readlinkSync(lay.link);
    } catch {
      repo = "";
    }
    const row = repo ? c.d.store.findSandbox(repo, name) : null;
    const live = row !== null && baseIdentity(row)?.dir === dir;
    const halfMade = existsSync(lay.creating) && !lockHeld(lockPath(c.d.paths.stateDir, repo, name));
    if (live && !halfMade) continue;
    if (existsSync(lay.creating) && !halfMade) continue; // a create in progress
    // The host never reads a clone, an orphan's least of all (nothing runs as it any more): a dir whose sandbox was
    // not synced to the end (no `.synced`, written by the last sync of a stop or rm) is kept.
    if (!halfMade && repo && existsSync(join(lay.clone, ".git")) && !existsSync(lay.synced)) {
      kept.push(`${dir}: its clone may hold commits the host does not have (its sandbox was not synced at the end); look at it inside a container, or delete the dir by hand`);
      continue;
    }
    removed.push(`sandbox dir ${dir}${halfMade ? " (interrupted create)" : ""}`);
    // A create killed while adding its remote leaves the repo's config locked; its remote cannot be removed (or
    // added again) until that lock is gone.
    const lock = halfMade && repo ? staleConfigLock(repo) : null;
    if (lock) {
      removed.push(`stale git lock ${lock} (a git killed with the create)`);
      if (!dry) rmSync(lock, { force: true });
    }
    if (!dry) await teardown(c, name, repo || "/nonexistent", dir, live ? row : null);
  }
  const rows = c.d.store.listSandboxes();
  for (const kind of Object.keys(c.d.drivers) as BackendKind[]) {
    let driver: Driver;
    try {
      driver = await c.driver(kind);
    } catch (e) {
      // Said only when there are sandboxes of that kind: a kind never used here is no news.
      if (rows.some((r) => r.backend === kind)) c.outOf(opts.out).log(`${kind} sandboxes not checked: ${(e as Error).message.split("\n")[0]}`);
      continue;
    }
    const keep = new Set(rows.filter((r) => r.backend === kind).flatMap((r) => baseIdentity(r)?.id ?? []));
    removed.push(...(await driver.prune(keep, { dryRun: dry })).removed);
  }
  for (const l of staleLocks(c.d.paths.stateDir)) {
    removed.push(`stale lock ${l}`);
    if (!dry) rmSync(l, { force: true });
  }
  for (const d of deadStagingDirs(c.d.paths)) {
    removed.push(`staged clone ${d} (its create died)`);
    if (!dry) rmSync(d, { recursive: true, force: true });
  }
  return { removed, kept };
}
