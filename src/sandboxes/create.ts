// `sbx create` (and `sbx run` of a new sandbox): the row, the driver's host-side parts, running it, then the host's
// uncommitted work and devcontainer.json's postCreateCommand; a failure removes what was made.
import { trace } from "../sys/trace";
import { existsSync, mkdirSync, unlinkSync, writeFileSync } from "node:fs";
import { sandboxExists, SbxError } from "../core/errors";
import { validateSandboxName } from "../core/names";
import { isAgentName } from "../core/agent-names";
import { KINDS } from "../core/backend-kind";
import { servicesRefused } from "../core/services";
import type { Sandbox } from "../core/schemas";
import type { Driver, NewSandbox } from "../drivers/driver";
import { terminalVars } from "../core/terminal-vars";
import { lineSplitter } from "../core/lines";
import { hostKeySources, hostSecretsByName } from "../llm/keys";
import { CopyIn, findingLines } from "../secrets/copy-in";
import { changedFiles, workingTreeChanges } from "../workspace/changes";
import { hostEndpoint, nextPorts, parsePortSpec, portsOf, reachableBeyondLoopback } from "../core/ports";
import { putBackRetiredRefs, retiredStamp, setAsideRetiredRefs, type SetAside } from "../sync/retired-refs";
import { sandboxDir } from "../sys/paths";
import { requirePlainGitDir } from "../workspace/clone";
import { sandboxLayout } from "../workspace/layout";
import { ensureStore, promoteStores } from "../sync/store";
import { sandboxId } from "../drivers/identity";
import { resolveLimits } from "../core/limits";
import { parseBudget } from "../core/llm-budget";
import { loadConfig } from "../sys/config-file";
import { NO_FACTS } from "../core/levels";
import { levelSetting } from "./level";
import type { ServiceContext } from "./context";
import { hostMirrorsFor, mirrorLines } from "./mirrors";
import { teardown } from "./remove";
import type { CreateRequest, Output } from "./requests";

/**
 * Creates a sandbox: row, then the driver's host-side parts, then (through the daemon when there is one: guards
 * first) running. Holds the per-name lock throughout, so two `sbx run x` at once give one sandbox. A failure removes
 * what was made; a half-made one (its creator died) is torn down and made again.
 */
export async function createSandbox(c: ServiceContext, req: CreateRequest): Promise<{ sandbox: Sandbox; created: boolean }> {
  try {
    return await createUnstaged(c, req);
  } finally {
    // Used or not (exists, a bad config, an error), a clone started ahead never outlives the create.
    await req.staged?.discard();
  }
}

async function createUnstaged(c: ServiceContext, req: CreateRequest): Promise<{ sandbox: Sandbox; created: boolean }> {
  validateSandboxName(req.name);
  if (isAgentName(req.name) && !(req.ifExists === "reuse" && c.d.store.listSandboxes().some((s) => s.name === req.name))) {
    throw new SbxError("usage", `'${req.name}' is an agent's name, and \`sbx run ${req.name}\` starts that agent`, {
      hint: `Name the sandbox otherwise (e.g. ${req.name}-1), or let \`sbx run ${req.name}\` name it.`,
    });
  }
  // The driver's check (Docker: one engine round trip) runs while the repo is found; both pass before anything is made.
  const guess = req.backend ?? c.d.defaultKind;
  const early = c.driver(guess).then((dr) => dr.ready());
  early.catch(() => undefined); // awaited below; never an unhandled rejection if repoOf throws first
  const repo = await c.repoOf(req);
  requirePlainGitDir(repo);
  // `run` of an existing sandbox without --backend enters it whatever its kind.
  const found = req.backend === undefined && req.ifExists === "reuse" ? c.d.store.findSandbox(repo, req.name) : null;
  const kind = found?.backend ?? guess;
  if (kind === guess) await early;
  else await (await c.driver(kind)).ready();
  const driver = await c.driver(kind);
  // Services are the Docker backend's (a container in the sandbox's namespace); another kind refuses them here too.
  if ((req.services?.length ?? 0) > 0 && !KINDS[kind].options.includes("service")) throw servicesRefused(kind);
  const out = c.outOf(req.out);
  trace("d create ready");
  const lock = await c.lock(repo, req.name, out);
  trace("d create locked");
  try {
    const dir = sandboxDir(c.d.paths, repo, req.name);
    const lay = sandboxLayout(dir);
    const existing = c.d.store.findSandbox(repo, req.name);
    if (existing && !existsSync(lay.creating)) {
      if (req.ifExists === "reuse" && (req.backend === undefined || req.backend === existing.backend)) {
        refuseNewOnly(req);
        c.sayNotes(existing, driver, out);
        await c.running.run(existing, driver, c.report(existing.id, out));
        return { sandbox: c.fresh(existing), created: false };
      }
      throw sandboxExists(req.name, repo, existing.backend);
    }
    if (existing || existsSync(dir)) {
      out.log(`clearing what an interrupted create of ${req.name} left behind…`);
      await teardown(c, req.name, repo, dir, existing);
    }
    // Decided before anything is made: a bad config or no free port refuses here, with nothing to clean up.
    const config = loadConfig(c.d.paths, c.d.env);
    const n: NewSandbox = { ...req, name: req.name, repo, dir, id: sandboxId(c.d.paths.sandboxRoot, repo, req.name), cwd: req.cwd, config };
    const limits = resolveLimits(c.capacity, config.limits, req.limits);
    // The flag's budget, else the config file's default: kept in the identity, where the LLM handler reads it per call.
    const llmBudget = req.limits?.llmBudget !== undefined ? parseBudget(req.limits.llmBudget) : config.llmBudget !== undefined ? parseBudget(config.llmBudget, "llmBudget") : null;
    const ports = (req.ports ?? []).map((s) => {
      const r = parsePortSpec(s);
      if (!r.ok) throw new SbxError("usage", `--port: ${r.reason}`, { hint: "e.g. --port 3000, or --port 8080:3000 (the host's 8080 to the sandbox's 3000)" });
      if (reachableBeyondLoopback(r.forward)) out.log(`note: ${hostEndpoint(r.forward)} is not loopback: other machines that reach this one reach sandbox ${req.name}'s port ${r.forward.port}`);
      return r.forward;
    });
    const made = await driver.newIdentity(n, c.d.store.listSandboxes(), c.report(null, out));
    // --port over devcontainer.json's forwardPorts (the driver's), one forward per host port.
    const forwards = nextPorts(portsOf(made), ports, []);
    // The host's package mirrors as they are now, through the copy-in door: kept for every session of the sandbox.
    const carried = hostMirrorsFor(c.d, req.name);
    for (const l of carried.lines) out.log(l);
    const identity = { ...made, limits, ...(forwards.length ? { ports: forwards } : {}), ...(llmBudget ? { llmBudget } : {}), ...(carried.mirrors ? { mirrors: carried.mirrors } : {}) };
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(lay.creating, `${process.pid}\n`);
    // Its level, from its first request on (what `balanced` reads of the repo is added before anything runs in it).
    const level = req.policy ?? config.policy;
    const row = c.d.store.createSandbox({ name: req.name, repo, backend: driver.kind, identity: level ? { ...identity, policy: { level, repo: NO_FACTS, at: Date.now() } } : identity });
    let aside: SetAside | null = null;
    let counting: Promise<number> | null = null;
    // The store's making and the set-aside, once begun: settled before anything made is undone.
    let hostWork: Promise<void> | null = null;
    try {
      cancelled(req);
      const h = { exec: driver.hostExec(driver.spec(row)), repo };
      if (level === "balanced") c.driverIdentity(row.id, { policy: await levelSetting(h.exec, repo, level, Date.now(), (l) => out.log(l)) });
      // Beside the clone: the store its commits will land in, and the person's branches made whole for every sandbox;
      // then an earlier sandbox's refs set aside (before anything of this one syncs). An image build whose context
      // holds the repo starts once these writes into its .git are done (`repoQuiet`).
      trace("d create provision");
      // The set-aside writes only refs/remotes/sandbox-<name>/* and refs/sbx-retired/*, which neither of the others
      // reads or writes: it runs beside them.
      const storing = (hostWork = Promise.all([
        promoteStores(h).finally(() => trace("d create promoted")).then(() => ensureStore(h, req.name)).finally(() => trace("d create stored")),
        setAside(c, row, driver, out).then((a) => void (aside = a)).finally(() => trace("d create set aside")),
      ]).then(() => undefined));
      // The guards come up as soon as what they use of the host is made (the driver says when: Docker, the clone and the
      // image's tag), beside the rest of the provision (the container's seed); ref sync's syncs wait for the store and
      // the set-aside (`hostWork`), the sandbox's start does not. The sandbox starts only once every guard is up
      // (running.run finds them up). A kind that never says is guarded by run, after the store's work.
      let raising = null as Promise<void> | null;
      const hostReady = (identity: Record<string, unknown>) => {
        if (req.signal?.aborted) return; // the create stops after the provision (cancelled, below)
        trace("d create guards");
        const now = c.fresh(row);
        raising = c.running.raiseGuards({ ...now, identity: { ...now.identity, ...identity } }, driver, storing);
        raising.catch(() => undefined); // settled below, before anything else is decided
      };
      const provisioning = driver.provision(row, { ...n, repoQuiet: storing.catch(() => undefined), hostReady }, c.report(row.id, out));
      // allSettled: a failed step's cleanup starts only once every step under way has settled (a guard still coming up
      // would otherwise be left serving a sandbox that is gone; the catch below waits for the store's work).
      // Guards raised here do not wait for the store and the set-aside: ref sync, the one guard that writes into them,
      // waits for them itself, so they do not hold the start, and fail the create all the same once it runs. Guards
      // that run raises (a kind that never said its host was ready) are raised without that wait: the start waits.
      const [made] = await Promise.allSettled([provisioning]);
      const [raised] = await Promise.allSettled([raising ?? storing]);
      if (made.status === "rejected") throw made.reason;
      if (raised.status === "rejected") throw raised.reason;
      c.driverIdentity(row.id, made.value);
      cancelled(req);
      trace("d create provisioned");
      // The host working tree's changes are counted beside the start (a read of the person's repo, which the start
      // never touches): the note waited ≈ 40 ms after it before.
      if (req.withChanges !== true) counting = changedFiles(driver.hostExec(driver.spec(row)), row.repo).catch(() => 0);
      await c.running.run(c.fresh(row), driver, c.report(row.id, out));
      await storing;
      trace("d create stored and ran");
      cancelled(req);
    } catch (e) {
      await counting; // nothing of the create still runs once it has failed
      await hostWork?.catch(() => undefined);
      out.log(`creating ${req.name} failed; removing what was made…`);
      await undoCreate(c, row, dir, aside, driver, out);
      c.d.store.audit({ sandboxId: null, kind: "lifecycle", action: "create.failed", detail: { name: req.name, repo, backend: driver.kind, error: (e as Error).message.split("\n")[0] } });
      throw e;
    }
    trace("d create ran");
    unlinkSync(lay.creating);
    const fresh = c.d.store.getSandbox(row.id) ?? row;
    for (const l of mirrorLines(c.d, fresh, driver.spec(fresh), driver.caps.seedsHome)) out.log(l);
    await workingTree(c, c.d.store.getSandbox(row.id) ?? row, driver, req.withChanges === true, out, counting);
    trace("d create worktree");
    await postCreate(c, c.d.store.getSandbox(row.id) ?? row, driver, out);
    const live = c.d.store.getSandbox(row.id) ?? row;
    c.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "create", detail: { name: req.name, repo, backend: driver.kind, ...createFacts(live) } });
    trace("d create done");
    return { sandbox: live, created: true };
  } finally {
    lock.release();
  }
}

/**
 * A new sandbox is a clone of the last commit: the host's uncommitted work is either said to stay behind (how many
 * files), or, with `--with-changes`, carried in as uncommitted changes, through the sandbox's own git and tar (the
 * host only writes to their stdin). One that does not apply is said; the sandbox is kept either way.
 */
async function workingTree(c: ServiceContext, row: Sandbox, driver: Driver, carry: boolean, out: Output, counted: Promise<number> | null): Promise<void> {
  const spec = driver.spec(row);
  const hostExec = driver.hostExec(spec);
  if (!carry) {
    const n = await (counted ?? changedFiles(hostExec, row.repo).catch(() => 0));
    if (n > 0) out.log(`note: ${n} changed file${n === 1 ? "" : "s"} in your working tree ${n === 1 ? "is" : "are"} not in ${row.name} (it starts from the last commit); \`--with-changes\` carries them in`);
    return;
  }
  // Copied in: through the door, with the host's secrets as they are now; what held one stays behind, said.
  const door = new CopyIn(hostSecretsByName(hostKeySources(c.d.env, c.d.paths.configDir)), { home: c.d.env.vars.HOME });
  const ch = await workingTreeChanges(hostExec, row.repo, Math.floor(Date.now() / 1000), door);
  const said = findingLines(door.findings, door.count);
  if (said.length > 0) out.log(`note: not carried in, it held a secret: ${said.join("; ")}`);
  const cwd = driver.sessionCwd(spec, row.repo);
  const inside = async (argv: string[], stdin: string | Uint8Array, what: string): Promise<boolean> => {
    const a = driver.shellArgv(spec, { argv, cwd, tty: false, env: terminalVars(c.d.env.raw), stdin: true });
    const r = await c.d.exec.run(a, { stdin, check: false, timeoutMs: 10 * 60_000 });
    if (r.exitCode === 0) return true;
    out.log(`warning: ${what} did not apply in ${row.name} (exit ${r.exitCode}): ${r.stderr.trim().split("\n").slice(-3).join(" | ")}`);
    return false;
  };
  let ok = true;
  if (ch.patch !== "") ok = (await inside(["git", "apply", "--binary", "--whitespace=nowarn", "-"], ch.patch, "your uncommitted changes")) && ok;
  if (ch.untracked) ok = (await inside(["tar", "-x", "-f", "-"], ch.untracked, "your untracked files")) && ok;
  for (const s of ch.skipped) out.log(`note: not carried in: ${s}`);
  if (ok) out.log(ch.files === 0 ? "--with-changes: your working tree has no changes" : `carried in ${ch.files} changed file${ch.files === 1 ? "" : "s"} as uncommitted changes`);
}

/**
 * devcontainer.json's postCreateCommand, once, in the new sandbox: as the user, in the repo's path, with the sandbox's
 * egress and its secrets' placeholders and trust (an `npm ci` against a private registry authenticates); its output
 * shown as it comes. One that fails is said and the sandbox kept (the person reruns it with
 * `sbx exec`); either way it does not run again.
 */
async function postCreate(c: ServiceContext, row: Sandbox, driver: Driver, out: Output): Promise<void> {
  const raw = row.identity.postCreate;
  if (!Array.isArray(raw) || raw.length === 0) return;
  const cmds = raw.filter((c): c is string[] => Array.isArray(c) && c.length > 0 && c.every((x) => typeof x === "string"));
  const { postCreate: _ran, ...rest } = row.identity;
  c.d.store.updateIdentity(row.id, rest);
  const spec = driver.spec(row);
  for (const cmd of cmds) {
    out.log(`postCreateCommand: ${cmd.length === 3 && cmd[0] === "/bin/sh" && cmd[1] === "-c" ? cmd[2] : cmd.join(" ")}`);
    // Its stderr with its stdout, in order (one stream back).
    const argv = driver.shellArgv(spec, { argv: ["/bin/sh", "-c", 'exec "$@" 2>&1', "sh", ...cmd], cwd: driver.sessionCwd(spec, row.repo), tty: false, env: { ...terminalVars(c.d.env.raw), ...(await c.secretEnv(row, spec, out)) }, stdin: false });
    const r = await c.d.exec.run(argv, { check: false, timeoutMs: 60 * 60_000, onStdout: lineSplitter((l) => out.log(`  ${l}`)) });
    if (r.exitCode !== 0) {
      out.log(`warning: postCreateCommand exited ${r.exitCode}; sandbox ${row.name} is kept (run it again with \`sbx exec ${row.name} -- …\`)`);
      return;
    }
  }
}

/**
 * An earlier sandbox of this name kept its commits as `refs/remotes/sandbox-<name>/*`: the new sandbox's first sync
 * (which makes them what its clone has, once it starts) would delete them, so they move to
 * `refs/sbx-retired/<name>/<stamp>/*` before it starts (nothing-lost). A create that fails puts them back.
 */
async function setAside(c: ServiceContext, row: Sandbox, driver: Driver, out: Output): Promise<SetAside | null> {
  const aside = await setAsideRetiredRefs(driver.hostExec(driver.spec(row)), row.repo, row.name, retiredStamp(new Date()));
  if (aside !== null) {
    const eg = aside.branches[0] ? ` (e.g. git log ${aside.prefix}/${aside.branches[0]})` : "";
    out.log(`note: the branches an earlier sandbox '${row.name}' left as sandbox-${row.name}/* are kept as ${aside.prefix}/*${eg}`);
    c.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "refs.set-aside", detail: { name: row.name, prefix: aside.prefix, branches: aside.branches } });
  }
  return aside;
}

/**
 * What a failed create made, unmade, so the host is as it was: the earlier sandbox's refs back where they were,
 * everything the driver made, the remote, the dirs, and the row itself (the audit log keeps the attempt).
 */
async function undoCreate(c: ServiceContext, row: Sandbox, dir: string, aside: SetAside | null, driver: Driver, out: Output): Promise<void> {
  const warn = (what: string) => (e: unknown) => out.log(`warning: ${what} after the failed create: ${(e as Error).message} (\`sbx prune\` retries)`);
  const live = c.d.store.getSandbox(row.id) ?? row;
  await teardown(c, row.name, row.repo, dir, live).catch(warn("cleanup"));
  if (aside) await putBackRetiredRefs(driver.hostExec(driver.spec(live)), row.repo, row.name, aside).catch(warn("putting the earlier sandbox's refs back"));
  c.d.store.purgeSandbox(row.id);
}

/** Throws once the caller of a create has gone away (the create then removes what it made). */
function cancelled(req: { name: string; signal?: AbortSignal | undefined }): void {
  if (req.signal?.aborted) {
    throw new SbxError("unavailable", `the create of ${req.name} was cancelled (its caller went away)`, { hint: `Run \`sbx create ${req.name}\` again.` });
  }
}

/** What the create's audit row records of the stored identity (the image for Docker, the port for user accounts). */
function createFacts(row: Sandbox): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ["image", "proxyPort"]) if (row.identity[k] !== undefined) out[k] = row.identity[k];
  return out;
}

/** An option only a new sandbox takes, given for one that exists (`sbx run` enters it): refused, never ignored. */
function refuseNewOnly(req: CreateRequest): void {
  const newOnly = [
    ...((req.overlays?.length ?? 0) > 0 ? ["--overlay"] : []),
    ...(req.claudeAuth ? ["--claude-auth"] : []),
    ...(req.exposeCredentials ? ["--expose-credentials"] : []),
    ...Object.keys(req.image ?? {}).map((k) => `--${k}`),
    ...(req.withChanges ? ["--with-changes"] : []),
    ...((req.ports?.length ?? 0) > 0 ? ["--port"] : []),
    ...((req.services?.length ?? 0) > 0 ? ["--service"] : []),
    ...(Object.keys(req.serviceEnv ?? {}).length > 0 ? ["--service-env"] : []),
    ...(req.pull ? ["--pull"] : []),
    ...(req.transparent === false ? ["--no-transparent"] : []),
    ...(req.allowWeaker ? ["--allow-weaker"] : []),
    ...(req.policy !== undefined ? ["--policy"] : []),
  ];
  if (newOnly.length > 0) {
    throw new SbxError("usage", `${newOnly.join(", ")} set up a new sandbox, and ${req.name} exists`, {
      hint: `Remove it and create it again with them (\`sbx rm ${req.name}\`; its commits stay as sandbox-${req.name}/*), or leave them out.`,
    });
  }
  if (req.rebuild === true) {
    throw new SbxError("usage", `--rebuild builds a new sandbox's image, and ${req.name} exists`, {
      hint: `\`sbx rebuild ${req.name}\` builds its image again and makes its container anew (its clone, home and allowlist stay).`,
    });
  }
  const given = Object.entries(req.limits ?? {}).filter(([, v]) => v !== undefined).map(([k]) => (k === "llmBudget" ? "--llm-budget" : `--${k}`));
  if (given.length > 0) {
    throw new SbxError("usage", `${given.join(", ")} set the limits of a new sandbox, and ${req.name} exists`, {
      hint: `Change its limits with \`sbx limits ${req.name} ${given.map((g) => `${g} …`).join(" ")}\`.`,
    });
  }
}
