// `sbx demo`: a throwaway repo, upstream and HTTPS sites on loopback, a sandbox in its own sbx state, and a scripted agent that proves each claim.
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { rootLabel } from "../drivers/docker/args";
import { defaultDaemonArgv } from "../client/autostart";
import { readEnv, type Env } from "../sys/env";
import type { Exec, ExecResult } from "../sys/exec";
import { pathsFor, type Paths } from "../sys/paths";
import { stopProcess } from "../sys/proc";
import { chooseBase, defaultBuildScript, demoDockerfile } from "./base-image";
import { makeSiteCert } from "./cert";
import { startSite, type DemoSite } from "./site";
import { clip, parseAgentLines, type DemoReport, type Step } from "./steps";
import { cleanGitEnv, startUpstream, type Upstream } from "./upstream";

export const SANDBOX = "demo";
/** Loopback addresses of the two demo sites (Linux routes all of 127/8 to lo; 127.0.0.1 is in the sandbox's NO_PROXY). */
export const ALLOWED_IP = "127.0.0.2";
export const OTHER_IP = "127.0.0.3";

export interface DemoHooks {
  /** A finished step (printed at once by the CLI). */
  step(s: Step): void;
  /** A note on a choice the demo made (stderr). */
  note(line: string): void;
  /** Progress of slow work (image build), raw chunks (stderr). */
  progress(chunk: string): void;
}

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
  return out;
}

/** The sbx CLI as a command: the same binary (compiled) or bun with the CLI's entry. */
function sbxArgv(): string[] {
  return defaultDaemonArgv().slice(0, -1);
}

interface Ctx {
  exec: Exec;
  root: string;
  repo: string;
  env: Record<string, string>;
  paths: Paths;
  hooks: DemoHooks;
}

async function sbx(c: Ctx, args: string[], o: { stdin?: string; timeoutMs?: number; progress?: boolean } = {}): Promise<ExecResult> {
  return c.exec.run([...sbxArgv(), ...args], {
    cwd: c.repo,
    env: c.env,
    replaceEnv: true,
    check: false,
    timeoutMs: o.timeoutMs ?? 120_000,
    ...(o.stdin !== undefined ? { stdin: o.stdin } : {}),
    ...(o.progress ? { onStderr: c.hooks.progress } : {}),
  });
}

/** runs: sbx shell demo -- bash agent.sh <phase> … (inside the sandbox) */
async function agent(c: Ctx, phase: string, ...args: string[]): Promise<{ r: ExecResult; kv: Record<string, string> }> {
  const r = await sbx(c, ["shell", SANDBOX, "--", "bash", "agent.sh", phase, ...args], { timeoutMs: 120_000 });
  return { r, kv: parseAgentLines(r.stdout) };
}

/** Why a command failed, in one line (its last stderr line). */
function why(r: ExecResult): string {
  const last = (r.stderr.trim().split("\n").filter(Boolean).slice(-2).join(" | ") || r.stdout.trim().split("\n").slice(-1)[0]) ?? "";
  return `exit ${r.exitCode}${last ? `: ${clip(last, 160)}` : ""}`;
}

/** runs: git <args> in a dir with no config of the caller's (identity given on the command line). */
async function git(c: Ctx, cwd: string, args: string[], env: Record<string, string> = {}): Promise<ExecResult> {
  return c.exec.run(["git", "-c", "user.name=sbx demo", "-c", "user.email=demo@sbx.invalid", "-c", "commit.gpgsign=false", ...args], {
    cwd,
    env: { ...cleanGitEnv(c.env.PATH ?? "/usr/bin:/bin"), ...env },
    replaceEnv: true,
    check: false,
    timeoutMs: 60_000,
  });
}

/** runs: docker inspect --format … on the demo sandbox's container (found by its sbx labels). */
async function containerState(c: Ctx): Promise<{ id: string; started: string; image: string } | null> {
  const ids = await c.exec.run(["docker", "ps", "--all", "--quiet", "--no-trunc", "--filter", `label=sbx.repo=${c.repo}`, "--filter", "label=sbx.role=sandbox"], { check: false });
  const id = ids.stdout.trim().split("\n").filter(Boolean)[0];
  if (!id) return null;
  const r = await c.exec.run(["docker", "inspect", "--format", "{{.State.StartedAt}} {{.Config.Image}}", id], { check: false });
  if (r.exitCode !== 0) return null;
  const [started = "", image = ""] = r.stdout.trim().split(" ");
  return { id, started, image };
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

function step(c: Ctx, steps: Step[], s: Step): void {
  steps.push(s);
  c.hooks.step(s);
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

    const base = await chooseBase({ exec: o.exec, uid: o.env.uid, buildScript: defaultBuildScript(), progress: o.hooks.progress }, o.pull);
    note(`base image: ${base.why}`);
    const canary = `sbx-demo-canary-${randomBytes(8).toString("hex")}`;
    await makeRepo(c, demoDockerfile(base), cert.certFile, upstream, token, canary);

    const secret = await sbx(c, ["secret", "set", upstream.secretName], { stdin: token });
    if (secret.exitCode !== 0) throw new Error(`sbx secret set failed: ${why(secret)}`);

    // The demo's own daemon, in its own state; stopped by pid at the end.
    const { connectDaemon } = await import("../client/autostart");
    await connectDaemon({ paths, env, onStart: (pid) => (daemonPid = pid) });
    note(`started the demo's own sbx daemon (pid ${daemonPid ?? "?"}); log: ${paths.daemonLog}`);

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

    const plan: Array<[string, string, string, () => Promise<void>]> = [];
    const add = (id: string, tried: string, expected: string, fn: () => Promise<Omit<Step, "id" | "tried" | "expected">>) =>
      plan.push([id, tried, expected, async () => step(c, steps, { id, tried, expected, ...(await fn()) })]);

    // 2. The allowed site, through the proxy.
    add("allowed-site", `curl ${allowed.url} (through the proxy)`, "HTTP 200 from the site", async () => {
      note(`the demo site runs on this machine's loopback, which no allowlist reaches: the demo publishes that one service (sbx publish ${SANDBOX} ${allowed.pattern})`);
      const a = await sbx(c, ["publish", SANDBOX, allowed.pattern]);
      if (a.exitCode !== 0) return { happened: `sbx publish ${SANDBOX} ${allowed.pattern} failed: ${why(a)}`, pass: false };
      const hits = allowed.hits();
      const { r, kv } = await agent(c, "fetch", allowed.url);
      const ok = kv.http_code === "200" && (kv.body ?? "").includes("allowed site") && allowed.hits() > hits;
      return { happened: ok ? `200 "${clip(kv.body ?? "", 60)}" via ${kv.proxy}` : agentFailure(r, kv), pass: ok };
    });

    // 3. A site not on the list: 403 with the header, the approval, sbx allow, success without restart.
    add("blocked-site", `curl ${other.url} (not on the list)`, "refused with 403 and an X-Sbx-Blocked header", async () => {
      const { r, kv } = await agent(c, "blocked", other.url, other.pattern);
      const ok = kv.http_code !== "200" && /\b403\b/.test(kv.status ?? "") && /x-sbx-blocked/i.test(kv.header ?? "") && other.hits() === 0;
      return {
        happened: ok ? `${kv.status}; ${kv.header}; "${clip(kv.text ?? "", 150)}"` : agentFailure(r, kv),
        pass: ok,
      };
    });
    add("approval-pending", "sbx approvals (on the host)", `a pending approval for ${other.pattern} from sandbox ${SANDBOX}`, async () => {
      const r = await sbx(c, ["approvals", "--json"]);
      let rows: Array<{ id: number; sandbox: string; host: string; port: number; count: number; reason: string }> = [];
      try {
        rows = JSON.parse(r.stdout);
      } catch {
        return { happened: `no JSON from sbx approvals: ${why(r)}`, pass: false };
      }
      const hit = rows.find((a) => a.sandbox === SANDBOX && a.host === other.ip && a.port === other.port);
      return { happened: hit ? `approval #${hit.id}: ${hit.host}:${hit.port} (${hit.reason}, seen ${hit.count}x)` : `${rows.length} pending, none for ${other.pattern}`, pass: hit !== undefined };
    });
    add("allow-then-reach", `sbx approvals allow <that approval> (it publishes ${other.pattern} for ${SANDBOX}), then curl again`, "HTTP 200, same container, no restart", async () => {
      const pending = await sbx(c, ["approvals", "--json"]);
      let rows: Array<{ id: number; sandbox: string; host: string; port: number }> = [];
      try {
        rows = JSON.parse(pending.stdout);
      } catch {
        return { happened: `no JSON from sbx approvals: ${why(pending)}`, pass: false };
      }
      const hit = rows.find((x) => x.sandbox === SANDBOX && x.host === other.ip && x.port === other.port);
      if (!hit) return { happened: `no pending approval for ${other.pattern} to allow`, pass: false };
      const a = await sbx(c, ["approvals", "allow", String(hit.id)]);
      if (a.exitCode !== 0) return { happened: `sbx approvals allow ${hit.id} failed: ${why(a)}`, pass: false };
      const { r, kv } = await agent(c, "fetch", other.url);
      const after = await containerState(c);
      const same = before !== null && after !== null && after.id === before.id && after.started === before.started;
      const ok = kv.http_code === "200" && other.hits() > 0 && same;
      return {
        happened: kv.http_code === "200" ? `200 "${clip(kv.body ?? "", 50)}"; container ${same ? "not restarted" : "RESTARTED or replaced"}` : agentFailure(r, kv),
        pass: ok,
      };
    });

    // 4. Around the proxy: direct TCP and DNS.
    add("direct-tcp", `curl --noproxy '*' ${allowed.url} (straight, not through the proxy)`, "fails; the sandbox has no route out", async () => {
      const { r, kv } = await agent(c, "direct", allowed.url);
      const ok = kv.direct_exit !== undefined && kv.direct_exit !== "0" && kv.routes === "0";
      return { happened: kv.direct_exit !== undefined ? `curl exit ${kv.direct_exit}; interfaces: ${kv.interfaces}; routes out: ${kv.routes}` : agentFailure(r, kv), pass: ok };
    });
    add("dns", "getent hosts sbx-demo-probe.example.com (and a reserved .invalid name)", "only sbx's stub answers: a sandbox-local 127.77.x.y, no query leaves; .invalid fails", async () => {
      const { r, kv } = await agent(c, "dns");
      const ok = (kv.nameservers ?? "").trim() === "127.77.0.1" && /^127\.77\.\d+\.\d+$/.test(kv.answer ?? "") && kv.getent_exit !== undefined && kv.getent_exit !== "0";
      return { happened: kv.nameservers !== undefined ? `nameserver ${kv.nameservers.trim()}; answer ${kv.answer || "none"}; .invalid: getent exit ${kv.getent_exit}` : agentFailure(r, kv), pass: ok };
    });

    // 5. A push through the shim and bridge, with the token added on the host.
    let sha = "";
    add("push", `git commit && git push origin agent-work:sbx/${SANDBOX}/agent-work (its own branch prefix; through the shim and bridge)`, "the token-demanding upstream accepts it", async () => {
      const { r, kv } = await agent(c, "push");
      sha = kv.sha ?? "";
      const up = await git(c, root, ["--git-dir", join(root, "upstream", "demo.git"), "rev-parse", "--verify", "-q", `refs/heads/sbx/${SANDBOX}/agent-work`]);
      const authed = upstream.requests.some((q) => q.authorized && q.method === "POST" && q.path.endsWith("git-receive-pack"));
      const ok = kv.push_exit === "0" && sha !== "" && up.stdout.trim() === sha && authed;
      return {
        happened: ok ? `pushed ${sha.slice(0, 12)}; upstream has it (the request carried the host's token)` : kv.push_exit !== undefined ? `push exit ${kv.push_exit}: ${clip(kv.push_output ?? "", 160)}` : agentFailure(r, kv),
        pass: ok,
      };
    });
    add("token-absent", "look for the upstream token inside: env, /proc/*/cmdline and environ, every readable file", "found nowhere", async () => {
      const ev = await sbx(c, ["shell", SANDBOX, "--", "bash", "agent.sh", "evidence"]);
      const evOk = ev.exitCode === 0 && ev.stdout.includes("----- end");
      const inEvidence = (ev.stdout + ev.stderr).includes(token);
      // Patterns on stdin, never argv: the canary proves the scan read them and reached the workspace.
      const scan = await sbx(c, ["shell", SANDBOX, "--", "grep", "-rasoF", "-D", "skip", "--exclude-dir=proc", "--exclude-dir=sys", "--exclude-dir=dev", "-f", "-", "/"], {
        stdin: `${canary}\n${token}\n`,
        timeoutMs: 300_000,
      });
      const sawCanary = scan.stdout.includes(canary);
      const inFiles = scan.stdout.split("\n").filter((l) => l.includes(token)).map((l) => l.slice(0, l.indexOf(":")));
      const ok = evOk && !inEvidence && sawCanary && inFiles.length === 0;
      const parts = [
        evOk ? (inEvidence ? "FOUND in env/argv" : "not in env, argv or environ") : `could not read env/argv (${why(ev)})`,
        !sawCanary ? `file scan inconclusive (it did not find the canary: ${why(scan)})` : inFiles.length ? `FOUND in ${inFiles.slice(0, 3).join(", ")}` : "in no file (the scan found the README's canary, so it ran)",
      ];
      return { happened: parts.join("; "), pass: ok };
    });
    add("secret-scan", "commit a key-shaped string (AKIA…) and push it", "the bridge refuses the push", async () => {
      const { r, kv } = await agent(c, "leak");
      const up = await git(c, root, ["--git-dir", join(root, "upstream", "demo.git"), "rev-parse", "--verify", "-q", "refs/heads/leaky"]);
      const refused = kv.push_exit !== undefined && kv.push_exit !== "0";
      const ok = refused && up.exitCode !== 0 && /secret|key|refus/i.test(kv.push_output ?? "");
      return { happened: kv.push_exit !== undefined ? `push exit ${kv.push_exit}: ${clip(kv.push_output ?? "", 160)}` : agentFailure(r, kv), pass: ok };
    });

    // 6. The host sees the agent's commit with no fetch (ref sync).
    add("host-sees-commit", "git rev-parse sandbox-demo/agent-work in the host repo (no git fetch run)", "the agent's commit", async () => {
      if (!sha) return { happened: "no commit to look for (the push step made none)", pass: false };
      const until = Date.now() + 10_000;
      let got = "";
      while (Date.now() < until) {
        const r = await git(c, c.repo, ["rev-parse", "--verify", "-q", `refs/remotes/sandbox-${SANDBOX}/agent-work`]);
        got = r.stdout.trim();
        if (got === sha) break;
        await Bun.sleep(200);
      }
      return { happened: got === sha ? `sandbox-${SANDBOX}/agent-work = ${sha.slice(0, 12)}` : got ? `it points at ${got.slice(0, 12)}, not ${sha.slice(0, 12)}` : `no ref sandbox-${SANDBOX}/agent-work after 10 s`, pass: got === sha };
    });

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

function agentFailure(r: ExecResult, kv: Record<string, string>): string {
  if (r.exitCode !== 0 && Object.keys(kv).length === 0) return `the agent could not run: ${why(r)}`;
  const bits = Object.entries(kv).map(([k, v]) => `${k}=${clip(v, 80)}`);
  return clip(bits.join(" "), 240) || why(r);
}

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
