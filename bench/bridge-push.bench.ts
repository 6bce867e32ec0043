// Benchmark: pushing a 1,000-commit branch through the git shim + bridge + gate vs a plain `git push` to the same local upstream.
import { NO_BRIDGE_SETTINGS } from "../src/core/bridge-settings";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { report, summarize } from "./lib";
import { startBridge } from "../src/bridge/server";
import { createExec } from "../src/sys/exec";
import { startGitHttpServer } from "../test/support/git-http-server";
import { git, sh, SHIMS } from "../test/integration/bridge/harness";

const COMMITS = 1000;
/** CPU ms used so far by this process and every descendant it (or they) reaped: Linux /proc, else NaN. */
function cpuMs(): number {
  try {
    const f = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
    // fields after "comm": state=0 … utime=11 stime=12 cutime=13 cstime=14 (clock ticks, 100 per second)
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10;
  } catch {
    return NaN;
  }
}
const RUNS = Number(process.env.RUNS ?? 5);
const PATH = process.env.PATH ?? "/usr/bin:/bin";

const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-bench-push-")));
const token = `tok-${randomBytes(16).toString("hex")}`;
const server = startGitHttpServer(join(root, "srv"), token);
try {
  const host = join(root, "host");
  mkdirSync(host);
  await git(host, "init", "-q", "-b", "main");
  await Bun.write(join(host, "README.md"), "hello\n");
  await git(host, "add", "README.md");
  await git(host, "commit", "-q", "-m", "init");
  await git(host, "remote", "add", "origin", server.repoUrl("unused"));
  const clone = join(root, "clone");
  await git(root, "clone", "-q", "--shared", host, clone);
  // 1,000 commits, each changing one file, made with fast-import.
  let stream = "";
  for (let i = 0; i < COMMITS; i++) {
    const data = `line ${i}\n${"x".repeat(200)}\n`;
    const msg = `commit ${i}`;
    stream += `commit refs/heads/big\ncommitter t <t@example.invalid> ${1700000000 + i} +0000\ndata ${msg.length}\n${msg}\n`;
    if (i === 0) stream += `from refs/heads/main\n`;
    stream += `M 100644 inline f${i % 50}.txt\ndata ${Buffer.byteLength(data)}\n${data}\n`;
  }
  const fi = await sh(["git", "fast-import", "--quiet"], { cwd: clone, stdin: stream });
  if (fi.code !== 0) throw new Error(fi.stderr);
  const sha = await git(clone, "rev-parse", "big");

  const real = createExec({ PATH });
  // TRACE=1: each git the bridge runs, as start..end ms after the shim was started, and its duration; the
  // bridge's stages (@ms bridge: …) and the shim's (@ms shim: …) on the same clock.
  let t0 = 0;
  const exec: typeof real = process.env.TRACE
    ? {
        ...real,
        run: async (argv, o) => {
          const t = performance.now();
          const r = await real.run(argv, o);
          const name = argv.filter((a, i) => !a.startsWith("-") && argv[i - 1] !== "-c").slice(1, 3).join(" ");
          console.error(`  +${(t - t0).toFixed(0)}..${(performance.now() - t0).toFixed(0)} ms (${(performance.now() - t).toFixed(0)} ms) ${name}`);
          return r;
        },
      }
    : real;
  const trace = process.env.TRACE ? (what: string) => console.error(`  @${(performance.now() - t0).toFixed(1)} ms bridge: ${what}`) : undefined;
  const viaBridge: number[] = [];
  const plain: number[] = [];
  let cpuBridge = 0;
  let cpuPlain = 0;
  for (let i = 0; i < RUNS + 1; i++) {
    // Fresh upstream, gate and tracking refs each run, so every run sends all 1,000 commits.
    const upB = `b${i}`;
    await server.createRepo(upB);
    await git(host, "remote", "set-url", "origin", server.repoUrl(upB));
    await git(clone, "remote", "set-url", "origin", server.repoUrl(upB));
    await sh(["git", "update-ref", "-d", "refs/remotes/origin/big"], { cwd: clone });
    const socket = join(root, `s${i}`, "bridge.sock");
    const bridge = await startBridge({
      settings: () => ({ ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"] }), // pushes by plain branch names; the prefix has its own test
      socketPath: socket,
      sandbox: { id: `bench${i}`, name: "bench", workspace: clone, repo: host },
      gateDir: join(root, `gate${i}`),
      secrets: () => ({ GIT_TOKEN: token }),
      audit: () => undefined,
      exec,
      path: PATH,
      ...(trace ? { trace } : {}),
    });
    const env: Record<string, string> = { SBX_IN_SANDBOX: "1", SBX_BRIDGE_SOCKET: socket, SBX_BUN: process.execPath, PATH: `${SHIMS}:${PATH}` };
    let c = cpuMs();
    const self = process.cpuUsage();
    let t = performance.now();
    t0 = t;
    if (process.env.TRACE) env.SBX_SHIM_TRACE = String(performance.timeOrigin + t);
    const r = await sh([join(SHIMS, "git"), "push", "-q", "origin", "big"], { cwd: clone, env });
    const dt = performance.now() - t;
    if (process.env.TRACE) process.stderr.write(r.stderr);
    const dcB = cpuMs() - c;
    if (process.env.TRACE) {
      const u = process.cpuUsage(self);
      console.error(`  = ${dt.toFixed(0)} ms shim push, run ${i}; CPU ${dcB} ms in all, ${((u.user + u.system) / 1000).toFixed(0)} ms in this process (bridge + upstream server)`);
    }
    await bridge.close();
    if (r.code !== 0) throw new Error(`shim push failed: ${r.stderr}`);
    const upP = `p${i}`;
    await server.createRepo(upP);
    const url = server.repoUrl(upP).replace("http://", `http://x:${token}@`);
    c = cpuMs();
    t = performance.now();
    const p = await sh(["git", "push", "-q", url, `${sha}:refs/heads/big`], { cwd: clone });
    const dp = performance.now() - t;
    const dcP = cpuMs() - c;
    if (p.code !== 0) throw new Error(`plain push failed: ${p.stderr}`);
    if (i > 0) {
      viaBridge.push(dt);
      plain.push(dp);
      cpuBridge += dcB;
      cpuPlain += dcP;
    }
  }
  const b = summarize(viaBridge);
  const p = summarize(plain);
  console.log(`push of ${COMMITS} commits, ${RUNS} runs (median ms): shim+bridge ${b.median.toFixed(0)}, plain ${p.median.toFixed(0)}; fastest: ${b.min.toFixed(0)} vs ${p.min.toFixed(0)} (${(b.min / p.min).toFixed(2)}x); CPU per push (all processes, mean ms): shim+bridge ${(cpuBridge / RUNS).toFixed(0)}, plain ${(cpuPlain / RUNS).toFixed(0)}`);
  report([{ name: `push ${COMMITS} commits via shim+bridge+gate`, unit: "ms", value: b.median, baselineName: "plain git push", baseline: p.median, better: "lower", target: 1.5 }]);
} finally {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
}
