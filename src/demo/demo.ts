// `sbx demo`: a throwaway repo, upstream and HTTPS sites on loopback, a sandbox in its own sbx state, and a scripted agent that proves each claim.
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { rootLabel } from "../drivers/docker/args";
import { readEnv, type Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import { pathsFor } from "../sys/paths";
import { stopProcess } from "../sys/proc";
import { chooseBase, defaultBuildScript, demoDockerfile, withNpm } from "./base-image";
import { makeSiteCert } from "./cert";
import { demoChecks } from "./checks";
import { containerState, git, SANDBOX, sbx, step, why, type Ctx, type DemoHooks } from "./commands";
import { startSite } from "./site";
import { clip, type DemoReport, type Step } from "./steps";
import { startUpstream, type Upstream } from "./upstream";
import { startRegistry } from "./registry";

export { SANDBOX } from "./commands";

/** Loopback addresses of the two demo sites (Linux routes all of 127/8 to lo; 127.0.0.1 is in the sandbox's NO_PROXY). */
export const ALLOWED_IP = "127.0.0.2";
export const OTHER_IP = "127.0.0.3";

export interface DemoOptions {
  exec: Exec;
  /** The caller's environment: only PATH, HOME, user and terminal variables are passed on. */
  env: Env;
  keep: boolean;
  pull: boolean;
  hooks: DemoHooks;
  /** Becomes true on ^C / SIGTERM: no further step starts, cleanup still runs. */
  interrupted: () => boolean;
  /** Where to make the temporary root (default /tmp: socket paths must stay short). */
  tmp?: string;
}

const PASSED_ON = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "DOCKER_HOST"] as const;

/** Pure: the environment every sbx command of the demo runs with: the caller's basics, the demo's own XDG dirs, no colour, no tokens. */
export function demoEnvironment(host: Readonly<Record<string, string>>, root: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of PASSED_ON) if (host[k]) out[k] = host[k]!;
  out.XDG_STATE_HOME = join(root, "state");
  out.XDG_CACHE_HOME = join(root, "cache");
  out.XDG_CONFIG_HOME = join(root, "config");
  out.XDG_RUNTIME_DIR = join(root, "run");
  out.NO_COLOR = "1";
  // Its secrets (the registry's token) stay in its own dir, never in the person's keychain or keyring.
  out.SBX_SECRETS_VAULT = "file";
  return out;
}

/** Builds the demo repo: Dockerfile, README with a canary, the agent script, the site's certificate; pushed to the upstream. */
async function makeRepo(c: Ctx, dockerfile: string, certFile: string, upstream: Upstream, token: string, canary: string): Promise<void> {
  mkdirSync(c.repo, { recursive: true, mode: 0o755 });
  writeFileSync(join(c.repo, "Dockerfile"), dockerfile);
  writeFileSync(
    join(c.repo, "README.md"),
    `# sbx demo repo\n\nMade by \`sbx demo\` for one run. The agent's script is agent.sh; demo-site.pem is the demo site's certificate.\n\ncanary: ${canary}\n`,
  );
  copyFileSync(new URL("../../templates/demo/agent.sh", import.meta.url).pathname, join(c.repo, "agent.sh"));
  copyFileSync(certFile, join(c.repo, "demo-site.pem"));
  const auth = { GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "http.extraHeader", GIT_CONFIG_VALUE_0: `Authorization: Basic ${btoa(`demo:${token}`)}` };
  for (const [args, env] of [
    [["init", "--quiet", "--initial-branch=main"], {}],
    [["add", "-A"], {}],
    [["commit", "--quiet", "-m", "demo repo"], {}],
    [["remote", "add", "origin", upstream.repoUrl("demo")], {}],
    // The host pushes with the token in its environment (never argv); the sandbox will push without ever seeing it.
    [["push", "--quiet", "origin", "main"], auth],
  ] as const) {
    const r = await git(c, c.repo, [...args], env);
    if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} in the demo repo failed: ${why(r)}`);
  }
}

/** Runs the whole demo; always cleans up (unless keep), whatever happened. */
export async function runDemo(o: DemoOptions): Promise<DemoReport> {
  const root = mkdtempSync(join(o.tmp ?? "/tmp", "sbx-demo-"));
  const env = demoEnvironment(o.env.raw, root);
  const paths = pathsFor(readEnv({ vars: env, uid: o.env.uid, gid: o.env.gid, platform: o.env.platform }));
  const c: Ctx = { exec: o.exec, root, repo: join(root, "demo"), env, paths, hooks: o.hooks };
  const steps: Step[] = [];
  const notes: string[] = [];
  const note = (l: string) => {
    notes.push(l);
    o.hooks.note(l);
  };
  const stoppers: Array<() => Promise<void>> = [];
  let daemonPid: number | null = null;
  let image: string | null = null;
  let sandboxMade = false;

  try {
    if (!paths.runtimeDir.startsWith(root + "/")) {
      throw new Error(`the demo's runtime dir would be ${paths.runtimeDir}, outside its own root; run it with a shorter TMPDIR`);
    }
    mkdirSync(join(root, "run"), { recursive: true, mode: 0o700 });
    note(`working in ${root} with its own sbx state (XDG_STATE_HOME, XDG_CACHE_HOME, XDG_CONFIG_HOME, XDG_RUNTIME_DIR), so your sandboxes are untouched`);

    // The sites, with a certificate made for this run.
    mkdirSync(join(root, "site"), { mode: 0o700 });
    const cert = await makeSiteCert(o.exec, join(root, "site"), [ALLOWED_IP, OTHER_IP]);
    const allowed = startSite(ALLOWED_IP, cert, "hello from the demo's allowed site");
    stoppers.push(() => allowed.stop());
    const other = startSite(OTHER_IP, cert, "hello from the site you just allowed");
    stoppers.push(() => other.stop());
    note(`HTTPS sites on ${allowed.pattern} (to be allowed) and ${other.pattern} (not on the list), with a one-day certificate made by ${cert.how === "openssl" ? "openssl" : "WebCrypto (openssl is not installed)"}; the agent trusts it through demo-site.pem in the repo`);

    // The upstream, demanding a token that only the host knows.
    const token = `sbxdemo_${randomBytes(20).toString("hex")}`;
    const upstream = startUpstream(o.exec, join(root, "upstream"), token, env.PATH ?? "/usr/bin:/bin");
    stoppers.push(() => upstream.stop());
    await upstream.createRepo("demo");
    note(`upstream git server at ${upstream.url} demands a token; the demo stores it host-side only (sbx secret set ${upstream.secretName})`);

    // A private npm registry on the host's loopback, demanding a token that only the host knows.
    const npmToken = `npm_${randomBytes(18).toString("hex")}`;
    const registry = await startRegistry(o.exec, join(root, "registry"), npmToken);
    stoppers.push(() => registry.stop());
    note(`private npm registry at ${registry.url} (plain HTTP, as a developer's Verdaccio) demands a token; the demo binds it host-side to host.sbx.internal (sbx secret set NPM_TOKEN --host host.sbx.internal --npmrc)`);

    const deps = { exec: o.exec, uid: o.env.uid, buildScript: defaultBuildScript(), progress: o.hooks.progress };
    const base = await withNpm({ ...deps, workDir: join(root, "npm-image"), path: env.PATH ?? "/usr/bin:/bin" }, await chooseBase(deps, o.pull));
    note(`base image: ${base.why}`);
    if (base.noNpm) note(`no npm in the sandbox: ${base.noNpm}`);
    const canary = `sbx-demo-canary-${randomBytes(8).toString("hex")}`;
    await makeRepo(c, demoDockerfile(base), cert.certFile, upstream, token, canary);

    const secret = await sbx(c, ["secret", "set", upstream.secretName], { stdin: token });
    if (secret.exitCode !== 0) throw new Error(`sbx secret set failed: ${why(secret)}`);

    // The demo's own daemon, in its own state; stopped by pid at the end.
    const { connectDaemon } = await import("../client/autostart");
    await connectDaemon({ paths, env, onStart: (pid) => (daemonPid = pid) });
    note(`started the demo's own sbx daemon (pid ${daemonPid ?? "?"}); log: ${paths.daemonLog}`);
    // Through the demo's own daemon and config, never the person's.
    const bound = await sbx(c, ["secret", "set", "NPM_TOKEN", "--host", "host.sbx.internal", "--npmrc"], { stdin: npmToken });
    if (bound.exitCode !== 0) throw new Error(`sbx secret set NPM_TOKEN --host host.sbx.internal --npmrc failed: ${why(bound)}`);

    const stopped = () => o.interrupted();
    const notRun = (id: string, tried: string, expected: string, reason: string) =>
      step(c, steps, { id, tried, expected, happened: `not run: ${reason}`, pass: false });

    // 1. The sandbox.
    if (stopped()) throw new Interrupted();
    o.hooks.note("creating the sandbox (the first run builds its image; progress below)…");
    const created = await sbx(c, ["create", SANDBOX], { timeoutMs: 900_000, progress: true });
    const before = await containerState(c);
    image = before?.image ?? null;
    sandboxMade = created.exitCode === 0;
    step(c, steps, {
      id: "sandbox",
      tried: `sbx create ${SANDBOX} in the demo repo`,
      expected: "a running sandbox (container with --network none)",
      happened: sandboxMade ? (before ? `created; container ${before.id.slice(0, 12)} from ${before.image.split(":")[0]}` : "created, but no container carries its labels") : why(created),
      pass: sandboxMade && before !== null,
    });

    // 2.–6. The claims, in order (checks.ts).
    const plan = demoChecks({ c, steps, note, allowed, other, upstream, token, canary, before, registry, npmToken, noNpm: base.noNpm });

    for (const [id, tried, expected, fn] of plan) {
      if (stopped()) throw new Interrupted();
      if (!sandboxMade) {
        notRun(id, tried, expected, "there is no sandbox (see the first step)");
        continue;
      }
      await fn();
    }
  } catch (e) {
    if (!(e instanceof Interrupted)) {
      step(c, steps, { id: "setup", tried: "prepare the demo", expected: "repo, upstream, sites, daemon ready", happened: clip((e as Error).message, 300), pass: false });
    }
  } finally {
    if (steps.some((s) => !s.pass)) tailLog(paths.daemonLog, o.hooks.note);
    if (!o.keep) {
      await cleanup(c, { daemonPid, sandboxMade, stoppers, note });
      if (image) note(`kept the image ${image.split(":")[0]}:${(image.split(":")[1] ?? "").slice(0, 12)}… for the next run (docker image rm ${image} removes it)`);
    } else {
      for (const s of stoppers) await s().catch(() => undefined);
      note(`kept: ${root} (repo, state, upstream); the daemon (pid ${daemonPid ?? "none"}) and sandbox '${SANDBOX}' are still running. Use it with XDG_STATE_HOME=${env.XDG_STATE_HOME} XDG_CACHE_HOME=${env.XDG_CACHE_HOME} XDG_CONFIG_HOME=${env.XDG_CONFIG_HOME} XDG_RUNTIME_DIR=${env.XDG_RUNTIME_DIR} sbx …`);
    }
  }
  const interrupted = o.interrupted();
  return { ok: !interrupted && steps.length > 0 && steps.every((s) => s.pass), steps, notes, root, kept: o.keep, daemonPid, interrupted };
}

class Interrupted extends Error {}


function tailLog(file: string, out: (l: string) => void): void {
  try {
    const lines = readFileSync(file, "utf8").trim().split("\n").slice(-15);
    out(`last lines of the demo daemon's log (${file}):`);
    for (const l of lines) out(`  ${clip(l, 300)}`);
  } catch {
    /* no log */
  }
}

/**
 * Removes everything the demo made: the sandbox (sbx rm --force), then the daemon by pid, then any container or volume
 * still labelled with the demo repo or the demo's state root (sbx.root), then the temporary root.
 * runs: sbx rm --force demo; kill -TERM <daemon pid>; docker rm --force …; docker volume rm --force …
 */
async function cleanup(
  c: Ctx,
  s: { daemonPid: number | null; sandboxMade: boolean; stoppers: Array<() => Promise<void>>; note: (l: string) => void },
): Promise<void> {
  const problems: string[] = [];
  if (existsSync(join(c.repo, ".git"))) {
    const r = await sbx(c, ["rm", "--force", SANDBOX]);
    if (r.exitCode !== 0 && s.sandboxMade) problems.push(`sbx rm: ${why(r)}`);
  }
  if (s.daemonPid !== null) {
    const pid = s.daemonPid;
    if (!(await stopProcess(pid, { waitMs: 15_000, pollMs: 100 }))) problems.push(`the daemon (pid ${pid}) ignored SIGTERM for 15 s and was killed`);
  }
  for (const stop of s.stoppers) await stop().catch(() => undefined);
  // Whatever sbx rm did not remove (a create that failed half-way): by label, never by name.
  const filters = [`label=sbx.repo=${c.repo}`, `label=sbx.root=${rootLabel(c.paths.sandboxRoot)}`];
  for (const kind of ["container", "volume"] as const) {
    const ids = new Set<string>();
    for (const f of filters) {
      const ls = kind === "container" ? ["docker", "ps", "--all", "--quiet", "--filter", f] : ["docker", "volume", "ls", "--quiet", "--filter", f];
      const r = await c.exec.run(ls, { check: false });
      for (const x of r.stdout.split("\n")) if (x.trim()) ids.add(x.trim());
    }
    if (ids.size === 0) continue;
    const rm = kind === "container" ? ["docker", "rm", "--force", ...ids] : ["docker", "volume", "rm", "--force", ...ids];
    await c.exec.run(rm, { check: false });
    problems.push(`removed ${ids.size} leftover ${kind}(s) by label`);
  }
  try {
    rmSync(c.root, { recursive: true, force: true });
  } catch (e) {
    problems.push(`could not remove ${c.root}: ${(e as Error).message}`);
  }
  s.note(problems.length ? `cleaned up (${problems.join("; ")})` : `cleaned up: sandbox, daemon, containers, volumes and ${c.root}`);
}
