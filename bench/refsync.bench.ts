// Ref sync latency: a commit in the clone until its ref is on the host, and back, against one plain `git fetch` each way.
// Run: bun bench/refsync.bench.ts [--json]. git "as the sandbox" is a git process in the clone (a stand-in for the Docker
// sandbox's exec agent, which adds a few ms per call; without a connected agent, `docker exec` adds ≈94 ms per call).
// Each way is the real protocol: clone → host lists the sandbox's branches, packs what the host lacks (inside), indexes
// it strictly into the sandbox's store and moves the refs; host → clone promotes, then update-refs inside.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createExec, streamRun } from "../src/sys/exec";
import type { SandboxGit } from "../src/sync/sandbox-git";
import { startRefSync, type Direction, type RefSyncEvent } from "../src/sync/refsync";
import { report, summarize } from "./lib";

const RUNS = 20;
const WARMUP = 2;
const TARGET_MS = 300;
const env = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: "/nonexistent",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "b",
  GIT_AUTHOR_EMAIL: "b@example.invalid",
  GIT_COMMITTER_NAME: "b",
  GIT_COMMITTER_EMAIL: "b@example.invalid",
};

async function git(cwd: string, ...args: string[]): Promise<string> {
  const p = Bun.spawn(["git", "-C", cwd, ...args], { env, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`git ${args.join(" ")}: ${err}`);
  return out.trim();
}

const root = mkdtempSync(join(tmpdir(), "sbx-bench-refsync-"));
try {
  // A repo with some history and 2000 files, so fetches have real refs and trees to negotiate.
  const host = join(root, "host");
  mkdirSync(host);
  await git(host, "init", "-q", "-b", "main");
  for (let d = 0; d < 20; d++) {
    mkdirSync(join(host, `d${d}`));
    for (let i = 0; i < 100; i++) writeFileSync(join(host, `d${d}`, `f${i}.txt`), `file ${d}/${i}\n`);
  }
  await git(host, "add", "-A");
  await git(host, "commit", "-q", "-m", "init");
  for (let i = 0; i < 50; i++) await git(host, "commit", "-q", "--allow-empty", "-m", `history ${i}`);
  const sandbox = join(root, "sandbox");
  mkdirSync(sandbox);
  const link = join(sandbox, "repo");
  symlinkSync(host, link);
  const clone = join(sandbox, "clone");
  await git(root, "clone", "-q", "--shared", link, clone);
  const alternates = `${join(link, ".git", "objects")}\n`;
  writeFileSync(join(clone, ".git", "objects", "info", "alternates"), alternates);
  await git(clone, "remote", "rename", "origin", "host");
  // Only for the baseline: plain `git fetch` of the clone into the host, the way sbx no longer does it.
  await git(host, "remote", "add", "plain-bench", clone);

  const inside = createExec(env);
  const sandboxGit: SandboxGit = (args, stdin) => streamRun(inside, ["git", "-C", clone, ...args], stdin === undefined ? {} : { stdin });

  // Each synced event resolves the waiter for its direction.
  const waiters: Partial<Record<Direction, () => void>> = {};
  const audit = (e: RefSyncEvent) => {
    if (e.action === "ref-sync.error") console.error("ref sync:", e);
    if (e.action === "ref-sync.synced") waiters[e.detail.direction as Direction]?.();
  };
  const next = (d: Direction) => new Promise<void>((r) => (waiters[d] = r));

  const sync = await startRefSync({
    hostRepo: host,
    name: "bench",
    sandboxGit: async () => sandboxGit,
    watchDir: join(clone, ".git"),
    exec: createExec({ PATH: env.PATH }),
    audit,
    pollMs: 0,
  });

  // clone → host: commit inside, then wait for the synced event, and check the ref really moved.
  const c2h: number[] = [];
  for (let i = 0; i < RUNS + WARMUP; i++) {
    const synced = next("clone-to-host");
    await git(clone, "commit", "-q", "--allow-empty", "-m", `inside ${i}`);
    const t = performance.now();
    const sha = await git(clone, "rev-parse", "HEAD"); // the test's own check, a few ms, counted against sync
    await synced;
    let got = await git(host, "rev-parse", "refs/remotes/sandbox-bench/main");
    // A sync that started mid-commit can end one commit short; the next one (already triggered) brings it.
    while (got !== sha) {
      await next("clone-to-host");
      got = await git(host, "rev-parse", "refs/remotes/sandbox-bench/main");
    }
    if (i >= WARMUP) c2h.push(performance.now() - t);
  }

  // host → clone: a commit on a host branch, then wait until the clone's remote-tracking ref has it.
  const h2c: number[] = [];
  for (let i = 0; i < RUNS + WARMUP; i++) {
    const synced = next("host-to-clone");
    await git(host, "commit", "-q", "--allow-empty", "-m", `host ${i}`);
    const t = performance.now();
    const sha = await git(host, "rev-parse", "HEAD");
    await synced;
    let got = await git(clone, "rev-parse", "refs/remotes/host/main");
    while (got !== sha) {
      await next("host-to-clone");
      got = await git(clone, "rev-parse", "refs/remotes/host/main");
    }
    if (i >= WARMUP) h2c.push(performance.now() - t);
  }
  await sync.stop();

  // Baselines: one plain fetch each way with one new commit to bring (the commit itself untimed).
  const plain = async (commitIn: string, fetchIn: string, remote: string) => {
    const xs: number[] = [];
    for (let i = 0; i < RUNS + WARMUP; i++) {
      await git(commitIn, "commit", "-q", "--allow-empty", "-m", `plain ${i}`);
      const t = performance.now();
      await git(fetchIn, "fetch", "-q", remote);
      if (i >= WARMUP) xs.push(performance.now() - t);
    }
    return summarize(xs);
  };
  const plainC2h = await plain(clone, host, "plain-bench");
  const plainH2c = await plain(host, clone, "host");

  const a = summarize(c2h);
  const b = summarize(h2c);
  report([
    { name: "ref sync clone→host (commit to host ref, median of 20)", unit: "ms", value: a.median, baselineName: "plain git fetch", baseline: plainC2h.median, better: "lower" },
    { name: "ref sync host→clone (commit to clone ref, median of 20)", unit: "ms", value: b.median, baselineName: "plain git fetch", baseline: plainH2c.median, better: "lower" },
  ]);
  if (!process.argv.includes("--json")) {
    for (const [n, s] of [["clone→host", a], ["host→clone", b]] as const) {
      console.log(`${n}: median ${s.median.toFixed(0)} ms, p90 ${s.p90.toFixed(0)} ms, min ${s.min.toFixed(0)} ms (target ≤ ${TARGET_MS} ms median: ${s.median <= TARGET_MS ? "met" : "NOT met"})`);
    }
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
