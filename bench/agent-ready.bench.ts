// Benchmark: how soon an agent is ready. `sbx run claude NAME -- --version` (1) with the sandbox absent (image built and
// Claude Code cached: both made once, untimed) beside `docker run --rm` of the same image with the same mounts running
// the same `claude --version` (target ≤ 1.5x); (2) with the sandbox stopped beside `docker start` + `docker exec` of a
// stopped container of that image with those mounts (target ≤ 1.3x). Alternated in one run; the daemon is running (as a
// service keeps it), started by the warm-up.
// Claude Code 2.1.332 comes from sbx's test cache (scripts/test-claude.sh puts it in /var/cache/sbx/test-tools), served
// to `sbx run claude` by an npm mirror on loopback (SBX_NPM_REGISTRY), as test/e2e/integration/mcp-claude-docker.test.ts
// does: nothing is downloaded.
// Run as root: flock /work/wt/e2e.lock bun bench/agent-ready.bench.ts [--json]  (RUNS=8; TRACE=1: sbx's stages, timed)
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { report, summarize } from "./lib";
import { benchWorld, CLI } from "./sandbox-env";

const RUNS = Number(process.env.RUNS ?? 8);
const VERSION = /^VERSION=(\S+)$/m.exec(readFileSync(join(import.meta.dir, "../scripts/test-claude.sh"), "utf8"))?.[1] ?? "";
const ARCH = process.arch === "arm64" ? "arm64" : "x64";
const PKG = `@anthropic-ai/claude-code-linux-${ARCH}`;
const TGZ = join(process.env.SBX_IMAGE_CACHE ?? "/var/cache/sbx", "test-tools", `anthropic-ai-claude-code-linux-${ARCH}-${VERSION}.tgz`);
if (!existsSync(TGZ)) {
  console.error(`agent-ready: Claude Code ${VERSION} is not in ${TGZ}: run scripts/test-claude.sh first (this bench downloads nothing)`);
  process.exit(69);
}

// The loopback npm mirror of the one package `sbx run claude` asks for.
const integrity = `sha512-${new Bun.CryptoHasher("sha512").update(readFileSync(TGZ)).digest("base64")}`;
let origin = "";
const mirror = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(r): Response {
    const path = decodeURIComponent(new URL(r.url).pathname);
    const doc = { version: VERSION, dist: { tarball: `${origin}/claude.tgz`, integrity } };
    if (path === "/@anthropic-ai/claude-code/latest" || path === `/${PKG}/${VERSION}`) return Response.json(doc);
    if (path === "/claude.tgz") return new Response(Bun.file(TGZ), { headers: { "content-type": "application/octet-stream" } });
    return new Response("not in this mirror", { status: 404 });
  },
});
origin = mirror.url.origin;

const world = benchWorld("ready");
const { repo } = world;
// TRACE=1: sbx's stages (src/sys/trace.ts: the CLI and its daemon write to one file), each timed sbx run's printed.
const traceFile = join(world.root, "trace.log");
const env = { ...world.env, SBX_NPM_REGISTRY: origin, ...(process.env.TRACE ? { SBX_TRACE: traceFile } : {}) };
// Async: the npm mirror answers from this process's event loop.
const sh = async (argv: string[], quiet = false, stdin?: string): Promise<string> => {
  const t = performance.now();
  const p = Bun.spawn(argv, { cwd: repo, env, stdin: stdin === undefined ? "ignore" : Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (process.env.TRACE && !quiet) console.error(`  ${(performance.now() - t).toFixed(0)} ms ${argv.slice(0, 6).join(" ")}`);
  if (code !== 0) throw new Error(`${argv.join(" ")}: ${err}`);
  return out.trim();
};
const NAME = "ready";
const PLAIN = `sbx-bench-ready-plain-${process.pid}`;
const volumes: string[] = [];
world.makeRepo();
try {
  // An agent with no login sbx can add is refused up front: a key (never sent anywhere: --version asks no model).
  await sh(["bun", CLI, "secret", "set", "ANTHROPIC_API_KEY"], true, `sk-ant-api03-bench${"0".repeat(40)}`);
  // Warm-up, untimed: the image, the agent in sbx's cache, the daemon.
  const first = await sh(["bun", CLI, "run", "claude", NAME, "--", "--version"]);
  if (!first.includes(VERSION)) throw new Error(`claude --version said ${JSON.stringify(first)}`);
  // The sandbox's container as sbx made it: its image, user, mounts and the agent's path inside.
  const ctr = (await sh(["docker", "ps", "--all", "--filter", `label=sbx.repo=${repo}`, "--filter", `label=sbx.name=${NAME}`, "--format", "{{.Names}}"])).split("\n")[0]!;
  if (!ctr) throw new Error("no container for the sandbox");
  const info = JSON.parse(await sh(["docker", "inspect", ctr]))[0] as {
    Config: { Image: string; User: string; WorkingDir: string; Env: string[] };
    Mounts: Array<{ Type: string; Source: string; Destination: string; RW: boolean; Name?: string }>;
  };
  const claude = (await sh(["docker", "exec", ctr, "sh", "-c", "command -v claude || ls /opt/sbx/agents/bin/claude"])).split("\n").pop()!;
  // The same mounts, read-only where sbx's are: what is the sandbox's own (under this bench's dirs: its clone, its files,
  // its overlay volumes' layers) copied once for the baseline, since each `sbx rm` below removes the sandbox's; the
  // host's (bun, the shims) as they are. An overlay volume becomes one of the same kind over a copy of its lower layer.
  const mounts: string[] = [];
  for (const [i, m] of info.Mounts.entries()) {
    const ro = m.RW ? "" : ",readonly";
    if (m.Type === "volume") {
      const opts = (JSON.parse(await sh(["docker", "volume", "inspect", m.Name!]))[0] as { Options: Record<string, string> }).Options ?? {};
      const lower = /(?:^|,)lowerdir=([^,]*)/.exec(opts.o ?? "")?.[1];
      const dir = join(world.root, "plain", `v${i}`);
      const o = lower ? `lowerdir=${join(dir, "lower")},upperdir=${join(dir, "upper")},workdir=${join(dir, "work")}` : undefined;
      if (lower) {
        await sh(["mkdir", "-p", join(dir, "upper"), join(dir, "work")], true);
        await sh(["cp", "-a", lower, join(dir, "lower")], true);
      }
      const name = `${PLAIN}-v${i}`;
      await sh(["docker", "volume", "create", "--label", "sbx.bench=1", ...Object.entries({ ...opts, ...(o ? { o } : {}) }).flatMap(([k, v]) => ["--opt", `${k}=${v}`]), name], true);
      volumes.push(name);
      mounts.push("--mount", `type=volume,src=${name},dst=${m.Destination}${ro}`);
      continue;
    }
    let src = m.Source;
    if (src.startsWith(`${world.root}/`) && !src.startsWith(`${repo}/`)) {
      src = join(world.root, "plain", `b${i}`);
      await sh(["mkdir", "-p", join(world.root, "plain")], true);
      await sh(["cp", "-a", m.Source, src], true);
    }
    mounts.push("--mount", `type=bind,src=${src},dst=${m.Destination}${ro}`);
  }
  const base = ["--network", "none", "--user", info.Config.User || "0", "--workdir", info.Config.WorkingDir || "/", ...mounts, info.Config.Image];
  if (process.env.TRACE) console.error(`  baseline: docker run --rm ${base.join(" ")} ${claude} --version`);
  await sh(["docker", "create", "--name", PLAIN, "--label", "sbx.bench=1", "--init", ...base, "sleep", "infinity"]);

  if (process.env.KEEP) {
    // Left as it is for a look by hand: the world's environment (the mirror stops with this process), the baseline.
    console.log(JSON.stringify({ env, repo, base, claude, PLAIN }));
    await new Promise(() => {});
  }
  const absent = { sbx: [] as number[], docker: [] as number[] };
  const stopped = { sbx: [] as number[], docker: [] as number[] };
  const timed = async (argv: string[]) => {
    if (process.env.TRACE) writeFileSync(traceFile, "");
    const t = performance.now();
    const out = await sh(argv, true);
    const dt = performance.now() - t;
    if (process.env.TRACE && argv[0] === "bun") {
      const t0 = performance.timeOrigin + t;
      for (const l of readFileSync(traceFile, "utf8").split("\n").filter(Boolean)) {
        const [at, , ...what] = l.split(" ");
        console.error(`    +${(Number(at) - t0).toFixed(0).padStart(5)} ms ${what.join(" ")}`);
      }
      console.error(`    +${dt.toFixed(0).padStart(5)} ms (exit)`);
    }
    if (!out.includes(VERSION)) throw new Error(`${argv.join(" ")} said ${JSON.stringify(out)}`);
    return dt;
  };
  for (let i = -1; i < RUNS; i++) {
    // (1) Absent: removed (untimed), then `sbx run` makes it and starts the agent.
    await sh(["bun", CLI, "rm", "--force", NAME], true);
    const a = await timed(["bun", CLI, "run", "claude", NAME, "--", "--version"]);
    const b = await timed(["docker", "run", "--rm", ...base, claude, "--version"]);
    // (2) Stopped: stopped (untimed), then `sbx run` starts it and the agent.
    await sh(["bun", CLI, "stop", NAME], true);
    await sh(["docker", "stop", "--time", "0", PLAIN], true);
    const c = await timed(["bun", CLI, "run", "claude", NAME, "--", "--version"]);
    const d0 = performance.now();
    await sh(["docker", "start", PLAIN], true);
    const d = performance.now() - d0 + (await timed(["docker", "exec", PLAIN, claude, "--version"]));
    if (process.env.TRACE) console.error(`  run ${i}: absent ${a.toFixed(0)} vs ${b.toFixed(0)} ms; stopped ${c.toFixed(0)} vs ${d.toFixed(0)} ms`);
    if (i < 0) continue;
    absent.sbx.push(a);
    absent.docker.push(b);
    stopped.sbx.push(c);
    stopped.docker.push(d);
  }
  const m = (xs: number[]) => summarize(xs).median;
  if (!process.argv.includes("--json")) console.log(`agent ready, ${RUNS} runs each (median ms)`);
  report([
    { name: "sbx run claude NAME -- --version, sandbox absent", unit: "ms", value: m(absent.sbx), baselineName: "docker run --rm (same image and mounts)", baseline: m(absent.docker), better: "lower", target: 1.5 },
    { name: "sbx run claude NAME -- --version, sandbox stopped", unit: "ms", value: m(stopped.sbx), baselineName: "docker start + docker exec", baseline: m(stopped.docker), better: "lower", target: 1.3 },
  ]);
} finally {
  const builtImage = world.imageOf();
  Bun.spawnSync(["docker", "rm", "--force", PLAIN], { stdout: "ignore", stderr: "ignore" });
  for (const v of volumes) Bun.spawnSync(["docker", "volume", "rm", "--force", v], { stdout: "ignore", stderr: "ignore" });
  Bun.spawnSync(["bun", CLI, "rm", "--force", NAME], { cwd: repo, env, stdout: "ignore", stderr: "ignore" });
  Bun.spawnSync(["bun", CLI, "secret", "rm", "ANTHROPIC_API_KEY"], { cwd: repo, env, stdout: "ignore", stderr: "ignore" });
  await world.stopDaemon();
  world.removeImage(builtImage);
  mirror.stop(true);
  rmSync(world.root, { recursive: true, force: true });
}
