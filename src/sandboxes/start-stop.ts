// Starting and stopping a stored sandbox: `start` (every command in it asks for this), the argv of a session in it,
// `sbx stop` (with one last sync), and `sbx rebuild` (its image again, its container anew).
import { SbxError } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import { terminalVars } from "../core/terminal-vars";
import type { ServiceContext } from "./context";
import { lastFetch } from "./last-sync";
import type { IfSessions, Named, SessionRequest } from "./requests";

/**
 * Starts a stored sandbox (every command in it asks for this; it converges): its guards up, then it runs. Holds its
 * lock, as every verb that changes a sandbox does, so a start never interleaves with a create, stop or rm of it.
 */
export async function startSandbox(c: ServiceContext, name: string, q: Named): Promise<Sandbox> {
  const { row, driver } = await c.locate(name, q);
  const out = c.outOf(q.out);
  // Commands run into one sandbox at once (an agent's and a person's) each ask for a start: a later one joins the
  // start in flight rather than queue behind it and be told to wait for "another command" (its stderr is the command's).
  const inFlight = c.starting.get(row.id);
  if (inFlight) {
    c.sayNotes(row, driver, out);
    await inFlight;
    return c.fresh(row);
  }
  const started = (async () => {
    const lock = await c.lockLive(row, out);
    try {
      const live = c.fresh(row);
      c.sayNotes(live, driver, out);
      await c.running.run(live, driver, c.report(row.id, out));
    } finally {
      lock.release();
    }
  })();
  c.starting.set(row.id, started);
  try {
    await started;
    return c.fresh(row);
  } finally {
    c.starting.delete(row.id);
  }
}

/**
 * The host argv of a session (shell or command), starting the sandbox if it is stopped: its guards are up before the
 * argv is handed out.
 */
export async function sessionArgv(c: ServiceContext, req: SessionRequest): Promise<string[]> {
  const row = await startSandbox(c, req.name, req);
  const driver = await c.driver(row.backend);
  const spec = driver.spec(row);
  if ((await driver.inspect(spec)).phase !== "running") {
    throw new SbxError("unavailable", `sandbox '${req.name}' is not running`, { hint: `Start it with \`sbx run ${req.name}\`; \`sbx status\` shows its guards.` });
  }
  return driver.shellArgv(spec, {
    argv: req.argv,
    cwd: driver.sessionCwd(spec, req.cwd),
    tty: req.tty,
    env: { ...(req.env ?? terminalVars(c.d.env.raw)), ...(await c.secretEnv(row, spec, req.out)) },
    stdin: req.stdin === true,
  });
}

/**
 * Stops a sandbox (its sessions ended, the sandbox first, then its guards), then takes one last clone → host sync so
 * `sandbox-<name>/*` on the host holds every commit made inside.
 */
export async function stopSandbox(c: ServiceContext, name: string, q: Named & { ifSessions?: IfSessions }): Promise<{ changed: boolean; sessions: number }> {
  const { row, driver } = await c.locate(name, q);
  const lock = await c.lockLive(row, q.out);
  try {
    const live = c.fresh(row);
    c.refuseSessions(live, "stop", q.ifSessions);
    const r = await c.running.halt(live, driver, `sandbox ${name} is being stopped (sbx stop)`);
    await lastFetch(c, live, driver, true);
    return { changed: r.running, sessions: r.sessions };
  } finally {
    lock.release();
  }
}

/**
 * `sbx rebuild NAME`: the image built again from the repo's Dockerfile as it is now, then the container made anew
 * from it and started. The image is built first, while the sandbox still runs: a failed build changes nothing. The
 * clone (and its commits), the home's overlays, the allowlist and the audit stay; sessions are ended only when the
 * caller says so (`ifSessions: "end"`), each told why.
 */
export async function rebuildSandbox(c: ServiceContext, name: string, w: Named & { ifSessions?: IfSessions }): Promise<{ image: string; sessions: number }> {
  const { repo, row, driver } = await c.locate(name, w);
  if (!driver.buildImage || !driver.dropRuntime) {
    throw new SbxError("usage", `sandbox ${name} is a ${row.backend} sandbox, which has no image to rebuild`, { hint: "Install what it needs in its account instead; `sbx rebuild` is for Docker sandboxes." });
  }
  const out = c.outOf(w.out);
  const lock = await c.lockLive(row, out);
  try {
    c.refuseSessions(row, "rebuild", w.ifSessions);
    out.log(`building the image of ${name} again…`);
    out.log(`note: files the sandbox wrote outside the clone and the overlaid dirs (${driver.spec(row).overlays.join(", ") || "none"}) go with its old container`);
    const { identity, image } = await driver.buildImage(row, c.report(row.id, out));
    c.refuseSessions(row, "rebuild", w.ifSessions); // one may have opened while it built
    const { sessions } = await c.running.halt(c.fresh(row), driver, `sandbox ${name} is being rebuilt (sbx rebuild)`);
    await driver.dropRuntime(row);
    c.driverIdentity(row.id, identity);
    c.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "rebuild", detail: { name, image } });
    // The new runtime is made here, so what its copy-ins left out (a secret found in ~/.claude, an overlay) is said to the caller.
    const fresh = c.fresh(row);
    await driver.prepareRun(fresh);
    driver.sayCopyIn?.(driver.spec(fresh), c.report(row.id, out));
    await c.running.run(c.fresh(row), driver, c.report(row.id, out));
    return { image, sessions };
  } finally {
    lock.release();
  }
}
