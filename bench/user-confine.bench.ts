// A user-account guest's command start (issue 24): `shellArgv(… true)` as the daemon runs it (cgroup join, setpriv,
// confine.ts's seccomp and Landlock, env, bash -l) against `setpriv … true` alone, and against the same argv without
// confine.ts and its own /proc (a mount namespace), so the confinement's own cost shows. Needs root, nftables and useradd (it makes a throwaway host user
// and guest, removed at the end). Run: bun bench/user-confine.bench.ts [--json]
import { report, timePair } from "./lib";
import { makeWorld, whyNot } from "../test/e2e/linux-user/harness";
import { LinuxUserBackend } from "../src/drivers/linux-user/backend";
import { createExec } from "../src/sys/exec";

const why = whyNot();
if (why) {
  console.log(`skipped: ${why}`);
  process.exit(0);
}
const w = await makeWorld();
try {
  const spec = { ...w.spec("bench"), limits: { memory: 512 * 1024 * 1024, cpus: 1, pids: 512 } };
  await w.backend.apply(spec);
  const guest = w.backend.guest(spec);
  const exec = createExec(process.env as Record<string, string>);
  const bare = new LinuxUserBackend({ exec, root: w.root, table: w.table, privateProc: false });
  const full = w.backend.shellArgv(spec, { argv: ["true"], cwd: w.repo, tty: false, env: {} });
  // Without any of the confinement: no confine.ts (seccomp, Landlock scopes and file rules), no /proc of its own.
  const noConfine = bare.shellArgv(spec, { argv: ["true"], cwd: w.repo, tty: false, env: {} });
  const setpriv = ["setpriv", `--reuid=${guest}`, `--regid=${guest}`, "--init-groups", "--no-new-privs", "--reset-env", "--", "true"];
  const run = (argv: string[]) => () => {
    const r = Bun.spawnSync(argv, { stdout: "ignore", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr}`);
  };
  const a = await timePair(run(full), run(setpriv), 40, 3);
  const b = await timePair(run(full), run(noConfine), 40, 3);
  report([
    { name: "guest command start: shellArgv(true) with confine.ts", unit: "ms", value: a.a.median, baselineName: "setpriv … true", baseline: a.b.median, better: "lower" },
    { name: "guest command start: shellArgv(true) with confine.ts", unit: "ms", value: b.a.median, baselineName: "the same without confine.ts or its own /proc", baseline: b.b.median, better: "lower" },
  ]);
  const delta = b.a.median - b.b.median;
  if (!process.argv.includes("--json")) console.log(`confinement's own cost per start: ${delta.toFixed(2)} ms (target ≤ 10 ms: ${delta <= 10 ? "met" : "NOT met"})`);
} finally {
  await w.teardown();
}
