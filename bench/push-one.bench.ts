// Benchmark: the push agents make all day, one new commit on their branch, through the git shim + bridge + gate beside a
// plain `git push` of the same commit to an identical upstream, alternated in one run (target: ≤ plain + 60 ms).
// The sandbox's bridge and gate are warm (it has pushed before); the upstream has the history and the branch's previous
// tip, as after the agent's last push. Both upstreams are served by the same git smart-HTTP server (git http-backend).
// Run: bun bench/push-one.bench.ts [--json]   (RUNS=20; TRACE=1 prints where the shim+bridge push spends its time)
import { NO_BRIDGE_SETTINGS } from "../src/core/bridge-settings";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { report, summarize } from "./lib";
import { startBridge } from "../src/bridge/server";
import { createExec } from "../src/sys/exec";
import { startGitHttpServer } from "../test/support/git-http-server";
import { git, sh, SHIMS } from "../test/integration/bridge/harness";

const RUNS = Number(process.env.RUNS ?? 20);
/** CPU ms used so far by this process (the bridge, the upstream's server) and every child it reaped: Linux /proc, else NaN. */
function cpuMs(): number {
  try {
    const f = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
    // fields after "comm": utime=11 stime=12 cutime=13 cstime=14 (clock ticks, 100 per second)
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10;
  } catch {
    return NaN;
  }
}
const PATH = process.env.PATH ?? "/usr/bin:/bin";
// A repository of some size: 300 commits over 400 files (the scan and the fast-forward check must not walk it).
const HISTORY = 300;
const FILES = 400;
const BRANCH = "sbx/bench/work";

const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-bench-push1-")));
const token = `tok-${randomBytes(16).toString("hex")}`;
const server = startGitHttpServer(join(root, "srv"), token);
const withToken = (url: string) => url.replace("http://", `http://x:${token}@`);
try {
  const host = join(root, "host");
  mkdirSync(host);
  await git(host, "init", "-q", "-b", "main");
  let stream = "";
  for (let i = 0; i < HISTORY; i++) {
    const msg = `commit ${i}`;
    stream += `commit refs/heads/main\ncommitter t <t@example.invalid> ${1700000000 + i} +0000\ndata ${msg.length}\n${msg}\n`;
    const files = i === 0 ? Array.from({ length: FILES }, (_, f) => f) : [i % FILES, (i * 7) % FILES];
    for (const f of files) {
      const data = `file ${f} at ${i}\n${"x".repeat(300)}\n`;
      stream += `M 100644 inline src/d${f % 20}/f${f}.txt\ndata ${Buffer.byteLength(data)}\n${data}`;
    }
    stream += "\n";
  }
  const fi = await sh(["git", "fast-import", "--quiet"], { cwd: host, stdin: stream });
  if (fi.code !== 0) throw new Error(fi.stderr);
  await git(host, "reset", "-q", "--hard", "main");
  // Two identical upstreams: the bridge's (the host repo's origin) and the plain push's.
  for (const name of ["viaBridge", "plain"]) {
    await server.createRepo(name);
    await git(host, "push", "-q", withToken(server.repoUrl(name)), "main");
  }
  await git(host, "remote", "add", "origin", server.repoUrl("viaBridge"));
  await git(host, "fetch", "-q", withToken(server.repoUrl("viaBridge")), "+refs/heads/*:refs/remotes/origin/*");
  const clone = join(root, "clone");
  await git(root, "clone", "-q", "--shared", host, clone);
  await git(clone, "remote", "set-url", "origin", server.repoUrl("viaBridge"));
  // The plain push's own remote, with its credential in the URL (what the agent would have without sbx). No fetch
  // refspec, so it writes no tracking ref: the shim packs `--not` every tracking ref, and one at the plain upstream's tip
  // would leave the commit out of the bridge's pack.
  await git(clone, "config", "remote.plain.url", withToken(server.repoUrl("plain")));
  await git(clone, "checkout", "-q", "-b", BRANCH);

  const real = createExec({ PATH });
  let t0 = 0;
  const exec: typeof real = process.env.TRACE
    ? {
        ...real,
        run: async (argv, o) => {
          const t = performance.now();
          const r = await real.run(argv, o);
          const name = argv.filter((a, i) => !a.startsWith("-") && argv[i - 1] !== "-c").slice(1, 3).join(" ");
          console.error(`  +${(t - t0).toFixed(1)}..${(performance.now() - t0).toFixed(1)} ms (${(performance.now() - t).toFixed(1)} ms) ${name}`);
          return r;
        },
      }
    : real;
  const trace = process.env.TRACE ? (what: string) => console.error(`  @${(performance.now() - t0).toFixed(1)} ms bridge: ${what}`) : undefined;
  const socket = join(root, "s", "bridge.sock");
  const bridge = await startBridge({
    settings: () => NO_BRIDGE_SETTINGS,
    socketPath: socket,
    sandbox: { id: "bench", name: "bench", workspace: clone, repo: host },
    gateDir: join(root, "gate"),
    secrets: () => ({ GIT_TOKEN: token }),
    audit: () => undefined,
    exec,
    path: PATH,
    ...(trace ? { trace } : {}),
  });
  const env: Record<string, string> = { SBX_IN_SANDBOX: "1", SBX_BRIDGE_SOCKET: socket, SBX_BUN: process.execPath, PATH: `${SHIMS}:${PATH}` };
  let n = 0;
  const commit = async () => {
    n++;
    const f = join(clone, "src", `d${n % 20}`, `f${n % FILES}.txt`);
    writeFileSync(f, `edited ${n}\n${"y".repeat(300)}\n`);
    await git(clone, "commit", "-q", "-a", "-m", `work ${n}`);
  };
  const viaBridge: number[] = [];
  const plain: number[] = [];
  // CPU of each (all processes; the bridge's bookkeeping after the reply, which the next push waits for, counted with
  // the next shim push).
  let cpuBridge = 0;
  let cpuPlain = 0;
  try {
    for (let i = -2; i < RUNS; i++) {
      // The same commit to both upstreams; which goes first alternates, so a warm page cache favours neither.
      await commit();
      const shim = async () => {
        const t = performance.now();
        t0 = t;
        const e = process.env.TRACE ? { ...env, SBX_SHIM_TRACE: String(performance.timeOrigin + t) } : env;
        const r = await sh([join(SHIMS, "git"), "push", "-q", "origin", BRANCH], { cwd: clone, env: e });
        const dt = performance.now() - t;
        if (process.env.TRACE) {
          process.stderr.write(r.stderr);
          console.error(`  = ${dt.toFixed(1)} ms shim push, run ${i}`);
        }
        if (r.code !== 0) throw new Error(`shim push failed: ${r.stderr}`);
        return dt;
      };
      const direct = async () => {
        const t = performance.now();
        const r = await sh(["git", "push", "-q", "plain", BRANCH], { cwd: clone });
        if (r.code !== 0) throw new Error(`plain push failed: ${r.stderr}`);
        return performance.now() - t;
      };
      let a: number;
      let b: number;
      let c0 = cpuMs();
      let s0 = process.cpuUsage();
      const cpu = () => {
        const c = cpuMs();
        const d = c - c0;
        c0 = c;
        if (process.env.TRACE) {
          const u = process.cpuUsage(s0);
          console.error(`  CPU ${d} ms in all, ${((u.user + u.system) / 1000).toFixed(0)} ms in this process (the bridge, the upstream's server)`);
        }
        s0 = process.cpuUsage();
        return d;
      };
      let ca: number;
      let cb: number;
      if (i % 2 === 0) {
        a = await shim();
        ca = cpu();
        b = await direct();
        cb = cpu();
      } else {
        b = await direct();
        cb = cpu();
        a = await shim();
        ca = cpu();
      }
      if (i >= 0) {
        viaBridge.push(a);
        plain.push(b);
        cpuBridge += ca;
        cpuPlain += cb;
      }
    }
  } finally {
    await bridge.close();
  }
  const got = await sh(["git", "--git-dir", join(root, "srv", "viaBridge.git"), "rev-parse", `refs/heads/${BRANCH}`]);
  if (got.stdout.trim() !== (await git(clone, "rev-parse", "HEAD"))) throw new Error("the bridge's upstream does not have the last commit");
  const bs = summarize(viaBridge);
  const ps = summarize(plain);
  if (!process.argv.includes("--json")) {
    console.log(`one-commit push, ${RUNS} runs (ms): shim+bridge median ${bs.median.toFixed(1)} (p90 ${bs.p90.toFixed(1)}, min ${bs.min.toFixed(1)}), plain median ${ps.median.toFixed(1)} (p90 ${ps.p90.toFixed(1)}, min ${ps.min.toFixed(1)}); added ${(bs.median - ps.median).toFixed(1)} ms (target ≤ +60 ms: ${bs.median - ps.median <= 60 ? "met" : "NOT met"}); CPU per push (all processes, mean ms): shim+bridge ${(cpuBridge / RUNS).toFixed(0)}, plain ${(cpuPlain / RUNS).toFixed(0)}`);
  }
  report([{ name: "push 1 commit via shim+bridge+gate", unit: "ms", value: bs.median, baselineName: "plain git push", baseline: ps.median, better: "lower" }]);
} finally {
  await server.stop();
  if (!process.env.KEEP) rmSync(root, { recursive: true, force: true }); else console.error(root);
}
