// Benchmark: `sbx create --service a=… --service b=…` (a sandbox and two services with healthchecks, waited for until
// healthy) vs the same containers started by hand: `git clone --shared`, `docker run` of the sandbox's image with no
// network, then `docker run` of each service in its network namespace (no capability, no-new-privileges), waited for
// until healthy the same way. Alternating runs, ratio printed.
// Run as root: bun bench/services.bench.ts  (needs Docker and the sbx-base:bookworm image; builds two small service images)
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { report, timePair } from "./lib";
import { benchWorld, CLI } from "./sandbox-env";

const world = benchWorld("services");
const { root, repo, env } = world;
const SERVICES = [
  { name: "a", image: "sbx-bench-svc-a:1", port: 7001 },
  { name: "b", image: "sbx-bench-svc-b:1", port: 7002 },
];

function sh(argv: string[], cwd = repo): string {
  const r = Bun.spawnSync(argv, { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/** A small service image: a Python HTTP server on its port, with a healthcheck every 0.5 s (built once, kept by tag). */
function buildServiceImage(image: string, port: number): void {
  if (Bun.spawnSync(["docker", "image", "inspect", image], { stdout: "ignore", stderr: "ignore" }).exitCode === 0) return;
  const dir = mkdtempSync(join(tmpdir(), "sbx-bench-svc-"));
  try {
    writeFileSync(
      join(dir, "Dockerfile"),
      `FROM sbx-base:bookworm\nUSER 65534:65534\nHEALTHCHECK --interval=500ms --timeout=5s --retries=60 CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${port}"]\nCMD ["python3", "-m", "http.server", "${port}", "--bind", "127.0.0.1", "--directory", "/tmp"]\n`,
    );
    sh(["docker", "build", "-q", "--label", "sbx.bench=1", "-t", image, dir], dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Waits until every named container is healthy (polling the engine, as sbx's own wait does). */
async function healthy(names: string[]): Promise<void> {
  for (;;) {
    const states = sh(["docker", "inspect", "--format", "{{.State.Health.Status}}", ...names], root).split("\n");
    if (states.every((s) => s === "healthy")) return;
    if (states.some((s) => s === "unhealthy")) throw new Error(`a service turned unhealthy: ${states.join(", ")}`);
    await Bun.sleep(100);
  }
}

/** This run's own containers' label (another bench's are never touched). */
const MINE = `sbx.bench=services-${process.pid}`;
/** The sandbox's own image (not a service's, which carries the same repo label). */
function sandboxImage(): string {
  const rows = sh(["docker", "ps", "--all", "--filter", `label=sbx.repo=${repo}`, "--format", '{{.Image}}\t{{.Label "sbx.role"}}'], root).split("\n");
  return rows.map((r) => r.split("\t")).find(([img, role]) => img?.startsWith("sbx-") && role !== "service")?.[0] ?? "";
}

world.makeRepo();
for (const s of SERVICES) buildServiceImage(s.image, s.port);
const flags = SERVICES.flatMap((s) => ["--service", `${s.name}=${s.image}`]);
let n = 0;
let m = 0;
const made: string[] = [];
try {
  // Warm: the sandbox's image is built once here, outside the timing.
  sh(["bun", CLI, "create", "warmup", ...flags]);
  made.push("warmup");
  const image = sandboxImage();

  const { a: sbx, b: base } = await timePair(
    () => {
      const name = `s${n++}`;
      made.push(name);
      sh(["bun", CLI, "create", name, ...flags]);
    },
    async () => {
      const d = join(root, `plain${m}`);
      const ctr = `sbx-bench-svcplain-${process.pid}-${m++}`;
      sh(["git", "clone", "--shared", "--quiet", repo, d], root);
      sh(["docker", "run", "-d", "--name", ctr, "--label", MINE, "--network", "none", "--init", "--mount", `type=bind,src=${d},dst=/w`, image, "sleep", "infinity"], root);
      const svcs = SERVICES.map((s) => `${ctr}-svc-${s.name}`);
      SERVICES.forEach((s, i) => sh(["docker", "run", "-d", "--name", svcs[i]!, "--label", MINE, "--network", `container:${ctr}`, "--init", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", s.image], root));
      await healthy(svcs);
    },
    5,
    1,
  );

  report([
    {
      name: "sbx create with two services (healthy)",
      unit: "ms",
      value: sbx.median,
      baselineName: "git clone --shared + docker run of the sandbox and of each service in its namespace, waited healthy",
      baseline: base.median,
      better: "lower",
    },
  ]);
} finally {
  const builtImage = sandboxImage();
  for (const name of made) Bun.spawnSync(["bun", CLI, "rm", "--force", name], { cwd: repo, env, stdout: "ignore", stderr: "ignore" });
  const ids = Bun.spawnSync(["docker", "ps", "-aq", "--filter", `label=${MINE}`]).stdout.toString().split("\n").filter(Boolean);
  if (ids.length) Bun.spawnSync(["docker", "rm", "-f", ...ids], { stdout: "ignore" });
  await world.stopDaemon();
  world.removeImage(builtImage);
  rmSync(root, { recursive: true, force: true });
}
