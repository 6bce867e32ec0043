// bounded (invariant 14), end to end on Docker: one sandbox abuses every endpoint it can reach (its proxy's port and
// socket routes, the egress desk and its waits, the transparent path's polls and DNS stub, the LLM routes, the bridge with
// 1 MiB argv and half-sent requests and a 9 MiB push, its exec agent's and listen sockets, ref churn) while a second
// sandbox does ordinary work (a GET through its proxy every 100 ms, `git ls-remote` through its bridge every 2 s) and
// the host asks the daemon's control API. Measured from the host: the daemon's RSS, CPU, descriptors and database, and
// the second sandbox's latency before, during and after. Bounded in time (about 40 s of load) and count; prints figures.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PROXY_MAX_CONNECTIONS } from "../../../src/core/bounds";
import { startGitHttpServer, type GitHttpServer } from "../../support/git-http-server";
import { createTestUser, type RunResult, type TestUser } from "../../support/test-user";
import { CLI, canRun, daemonPid, ownRepo, removeOwnWorld, runtimeDirOf, skipReason } from "./fixture";

const BASE_S = 8;
const FLOOD_S = 20;
const HOLD_S = 8;
const AFTER_S = 5;
const tag = Math.random().toString(36).slice(2, 8);
const TOKEN = `sbxboundedtoken${tag}${"q".repeat(16)}`;

interface Sample {
  at: number;
  rssKiB: number;
  cpuTicks: number;
  fds: number;
  /** The database file, and its write-ahead log (reused once checkpointed: it stays near SQLite's 1000 pages). */
  dbBytes: number;
  walBytes: number;
  controlMs: number;
}

function daemonSample(pid: number, db: string): Omit<Sample, "at" | "controlMs"> {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const size = (p: string) => {
    try {
      return statSync(p).size;
    } catch {
      return 0;
    }
  };
  return {
    rssKiB: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0),
    // utime and stime (fields 14 and 15 of stat; 12 and 13 after the name and state)
    cpuTicks: Number(fields[11]) + Number(fields[12]),
    fds: readdirSync(`/proc/${pid}/fd`).length,
    dbBytes: size(db),
    walBytes: size(`${db}-wal`),
  };
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

const fmt = (n: number) => (Number.isFinite(n) ? (n >= 100 ? n.toFixed(0) : n.toFixed(1)) : "-");

describe.skipIf(!canRun)(`bounded: one sandbox's abuse of every endpoint leaves the daemon flat and another sandbox's work unharmed (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  // Its own user, repo and daemon: the figures are this daemon's alone, and no other file's sandboxes share it.
  let user: TestUser;
  let repo = "";
  let upstream: GitHttpServer;
  let upstreamRoot = "";
  let web: ReturnType<typeof Bun.serve>;
  const sbx = (args: string[], stdin?: string) => user.run(["bun", CLI, ...args], { cwd: repo, ...(stdin !== undefined ? { stdin } : {}) });
  const must = (r: RunResult, what: string) => {
    if (r.code !== 0) throw new Error(`${what} exited ${r.code}: ${r.stderr}${r.stdout}`);
    return r;
  };
  const done = async (p: Bun.Subprocess<"ignore", "pipe", "pipe">): Promise<RunResult> => {
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, stdout, stderr };
  };
  const git = (args: string[]) => must(user.run(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", ...args], { cwd: repo }), `git ${args[0]}`);
  const containerOf = (name: string) =>
    Bun.spawnSync(["docker", "ps", "--all", "--filter", `label=sbx.repo=${repo}`, "--filter", `label=sbx.name=${name}`, "--format", "{{.Names}}"]).stdout.toString().trim();

  beforeAll(async () => {
    user = createTestUser();
    repo = realpathSync(ownRepo(user, "bounded"));
    mkdirSync(join(repo, ".soak"));
    for (const f of ["abuse", "worker"]) writeFileSync(join(repo, ".soak", `${f}.ts`), readFileSync(join(import.meta.dir, `bounded-${f}.ts`)));
    for (const p of [join(repo, ".soak"), join(repo, ".soak", "abuse.ts"), join(repo, ".soak", "worker.ts")]) chownSync(p, user.uid, user.gid);
    git(["add", "-A"]);
    git(["commit", "-qm", "soak scripts"]);
    upstreamRoot = mkdtempSync("/tmp/sbxt-bounded-");
    upstream = startGitHttpServer(upstreamRoot, TOKEN);
    await upstream.createRepo("proj");
    must(sbx(["secret", "set", "GIT_TOKEN"], TOKEN), "sbx secret set GIT_TOKEN");
    git(["remote", "add", "origin", upstream.repoUrl("proj")]);
    must(await done(user.spawn(["git", "push", "-q", upstream.repoUrl("proj").replace("http://", `http://x:${TOKEN}@`), "main"], { cwd: repo })), "host push main");
    web = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok\n") });
    const made = await Promise.all(["abuser", "worker"].map((n) => done(user.spawn(["bun", CLI, "create", n], { cwd: repo }))));
    for (const m of made) must(m, "sbx create");
    must(sbx(["publish", "worker", String(web.port)]), "sbx publish");
  }, 180_000);

  afterAll(async () => {
    web?.stop(true);
    await upstream?.stop();
    if (upstreamRoot) rmSync(upstreamRoot, { recursive: true, force: true });
    if (user) await removeOwnWorld(user, repo, () => void ["abuser", "worker"].map((n) => sbx(["rm", "--force", n])));
  }, 120_000);

  test("the daemon's memory, CPU, descriptors and database stay within their bounds, and the second sandbox's latency holds", async () => {
    const pid = daemonPid(user)!;
    expect(pid).toBeGreaterThan(0);
    const db = join(user.home, ".local", "state", "sbx", "sbx.db");
    const control = join(runtimeDirOf(user), "control.sock");
    const abuserCtr = containerOf("abuser");
    const workerCtr = containerOf("worker");
    const exec = (ctr: string, argv: string[]) =>
      Bun.spawn(["docker", "exec", "--user", `${user.uid}:${user.gid}`, "--workdir", repo, ctr, ...argv], { stdout: "pipe", stderr: "pipe" }) as Bun.Subprocess<"ignore", "pipe", "pipe">;

    // The host side: the daemon's figures, and its control API's answer time, every 250 ms.
    const samples: Sample[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const t0 = performance.now();
        let controlMs = NaN;
        try {
          const r = await fetch("http://sbx/v1/sandboxes", { unix: control, signal: AbortSignal.timeout(10_000) } as RequestInit);
          await r.text();
          if (r.ok) controlMs = performance.now() - t0;
        } catch {}
        samples.push({ at: Date.now(), controlMs, ...daemonSample(pid, db) });
        await Bun.sleep(250);
      }
    })();

    const t = { start: Date.now(), flood: 0, hold: 0, after: 0, end: 0 };
    // (the abuser ends at most 5 s after its hold; the worker goes on AFTER_S past that)
    const worker = done(exec(workerCtr, ["/opt/sbx/bin/bun", ".soak/worker.ts", `http://host.sbx.internal:${web.port}/`, String(BASE_S + FLOOD_S + HOLD_S + 5 + AFTER_S)]));
    await Bun.sleep(BASE_S * 1000);
    t.flood = Date.now();
    t.hold = t.flood + FLOOD_S * 1000;
    const abuser = done(exec(abuserCtr, ["/opt/sbx/bin/bun", ".soak/abuse.ts", String(FLOOD_S), String(HOLD_S)]));
    const a = await abuser;
    t.after = Date.now();
    const w = await worker;
    t.end = Date.now();
    sampling = false;
    await sampler;
    // The abuse is gone: what it held is let go.
    await Bun.sleep(1500);
    const settled = daemonSample(pid, db);

    const counts = JSON.parse(a.stdout.trim().split("\n").at(-1) || "{}") as Record<string, number>;
    const work = w.stdout.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as { at: number; kind: string; ms: number; ok: boolean });
    const phases = [
      ["before", t.start, t.flood],
      ["flood", t.flood, t.hold],
      ["hold", t.hold, t.after],
      ["after", t.after, t.end],
    ] as const;
    const lat = (kind: string, from: number, to: number) => work.filter((x) => x.kind === kind && x.at >= from && x.at < to);
    const ctl = (from: number, to: number) => samples.filter((s) => s.at >= from && s.at < to);
    const cpu = (from: number, to: number) => {
      const s = ctl(from, to);
      if (s.length < 2) return NaN;
      return ((s.at(-1)!.cpuTicks - s[0]!.cpuTicks) / 100 / ((s.at(-1)!.at - s[0]!.at) / 1000)) * 100;
    };
    const lines = ["phase    worker GET p50/p95/max ms   git ls-remote p50/max ms   control p50/p95 ms   daemon CPU %   RSS MiB (max)   fds (max)   DB+WAL KiB (max)"];
    const row: Record<string, { get50: number; get95: number; getMax: number; cpu: number; rss: number; fds: number }> = {};
    for (const [name, from, to] of phases) {
      const g = lat("proxy", from, to).map((x) => x.ms);
      const b = lat("bridge", from, to).map((x) => x.ms);
      const c = ctl(from, to);
      const cms = c.map((s) => s.controlMs).filter(Number.isFinite);
      const rss = Math.max(...c.map((s) => s.rssKiB)) / 1024;
      const fds = Math.max(...c.map((s) => s.fds));
      row[name] = { get50: pct(g, 50), get95: pct(g, 95), getMax: Math.max(...g), cpu: cpu(from, to), rss, fds };
      lines.push(
        `${name.padEnd(8)} ${`${fmt(pct(g, 50))}/${fmt(pct(g, 95))}/${fmt(Math.max(...g))}`.padEnd(27)} ${`${fmt(pct(b, 50))}/${fmt(Math.max(...b))}`.padEnd(26)} ${`${fmt(pct(cms, 50))}/${fmt(pct(cms, 95))}`.padEnd(20)} ${fmt(cpu(from, to)).padEnd(14)} ${fmt(rss).padEnd(15)} ${String(fds).padEnd(11)} ${fmt(Math.max(...c.map((s) => s.dbBytes)) / 1024)}+${fmt(Math.max(...c.map((s) => s.walBytes)) / 1024)}`,
      );
    }
    const base = ctl(t.start, t.flood)[0]!;
    const peak = { rss: Math.max(...samples.map((s) => s.rssKiB)), fds: Math.max(...samples.map((s) => s.fds)), db: Math.max(...samples.map((s) => s.dbBytes + s.walBytes)) };
    lines.push(`settled: RSS ${fmt(settled.rssKiB / 1024)} MiB, fds ${settled.fds}, DB ${fmt(settled.dbBytes / 1024)} KiB + WAL ${fmt(settled.walBytes / 1024)} KiB`);
    lines.push(`abuser was answered: ${JSON.stringify(counts)}`);
    console.log(`bounded soak:\n${lines.join("\n")}`);

    // The second sandbox's work went on: every request answered, within a bounded slowdown.
    const failed = work.filter((x) => !x.ok);
    expect(failed.slice(0, 5)).toEqual([]);
    for (const [name] of phases) expect({ phase: name, samples: lat("proxy", ...(phases.find((p) => p[0] === name)!.slice(1) as [number, number])).length > 0 }).toEqual({ phase: name, samples: true });
    // Stated limits (README "Bounded"). The daemon's memory grows by at most 200 MiB, its descriptors by what the bounds
    // allow (the abuser's connections, those being refused, and a margin) and are back after; its database and WAL by at
    // most 8 MiB (audit budget, names map, pending approvals; the WAL is reused once checkpointed); holding what it may
    // costs it at most 30 % of a CPU: 6 % on a quiet machine, 17 % with the rest of the suite running beside it (a loaded
    // machine inflates even CPU time), where the poll loop this bound is for held it at 95 %. The other sandbox's work never
    // fails; its latency in each phase is printed above, not judged: the suite holds no timing assertion (a loaded
    // machine slows every request), so the figures are the README's, from this test's own table.
    expect(row.hold!.cpu).toBeLessThan(30);
    expect((peak.rss - base.rssKiB) / 1024).toBeLessThan(200);
    expect(peak.fds - base.fds).toBeLessThan(3 * PROXY_MAX_CONNECTIONS + 200);
    expect(settled.fds - base.fds).toBeLessThan(40);
    expect((peak.db - base.dbBytes - base.walBytes) / 1024 / 1024).toBeLessThan(8);
    // What the abuser held was capped where the bounds say.
    expect(counts["held.at-flood-end"] ?? 0).toBeLessThanOrEqual(PROXY_MAX_CONNECTIONS);
  }, 180_000);
});
