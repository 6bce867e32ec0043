// Benchmark: `sbx create` of a 5,000-file repo whose Dockerfile copies the repo in (COPY . /app), with what a working
// repo also holds beside its commits (an ignored .env, 2,000 ignored cache files). Warm: the image's tag exists, so
// what is timed is working out the tag; rebuilt: `--rebuild` sends the build context each time (layers cached).
// Baselines: git clone --shared + docker create + start (warm), and `docker build` of the repo dir by hand (rebuilt).
// Run as root: bun bench/create-copy.bench.ts  (needs Docker and the sbx-base:bookworm image)
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { userRecipe } from "../src/workspace/init";
import { report, timePair } from "./lib";
import { benchWorld, CLI } from "./sandbox-env";

const world = benchWorld("create-copy");
const { root, repo, env, sh } = world;
const files: Record<string, string> = { ".gitignore": ".env\nnode_modules/\n" };
for (let d = 0; d < 50; d++) for (let i = 0; i < 100; i++) files[`dir${d}/f${i}.txt`] = `file ${d}/${i}\n`.repeat(20);
world.makeRepo(files);
const dockerfile = `FROM sbx-base:bookworm\n${userRecipe()}\nCOPY . /app\n`;
writeFileSync(join(repo, "Dockerfile"), dockerfile);
sh(["git", "-c", "user.email=b@example.invalid", "-c", "user.name=b", "commit", "-qam", "copy the repo in"]);
// What the working tree holds beside the commit: never part of the image.
writeFileSync(join(repo, ".env"), "API_TOKEN=not-for-the-image\n");
mkdirSync(join(repo, "node_modules", ".cache"), { recursive: true });
for (let i = 0; i < 2000; i++) writeFileSync(join(repo, "node_modules", ".cache", `c${i}.bin`), "x".repeat(10_000));

const run = (argv: string[]) => {
  const r = Bun.spawnSync(argv, { cwd: repo, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr.toString()}`);
};
let n = 0;
const made: string[] = [];
const manual = `sbx-bench-manual:${process.pid}`;
try {
  // The image is built once here, outside the timing.
  run(["bun", CLI, "create", "warmup"]);
  made.push("warmup");
  const image = world.imageOf();

  let m = 0;
  const warm = await timePair(
    () => {
      const name = `w${n++}`;
      run(["bun", CLI, "create", name]);
      made.push(name);
    },
    () => {
      const d = join(root, `plain${m}`);
      const ctr = `sbx-bench-plain-${process.pid}-${m++}`;
      sh(["git", "clone", "--shared", "--quiet", repo, d]);
      sh(["docker", "create", "--name", ctr, "--label", "sbx.bench=1", "--network", "none", "--init", "--mount", `type=bind,src=${d},dst=/w`, image, "sleep", "infinity"]);
      sh(["docker", "start", ctr]);
    },
    5,
    1,
  );
  const rebuilt = await timePair(
    () => {
      const name = `r${n++}`;
      run(["bun", CLI, "create", "--rebuild", name]);
      made.push(name);
    },
    () => run(["docker", "build", "--quiet", "--force-rm", "--tag", manual, ...Object.entries({ USER_NAME: "root", USER_UID: "0", USER_GID: "0", USER_HOME: env.HOME }).flatMap(([k, v]) => ["--build-arg", `${k}=${v}`]), repo]),
    5,
    1,
  );
  report([
    { name: "sbx create, COPY . Dockerfile (5,000 files, warm)", unit: "ms", value: warm.a.median, baselineName: "git clone --shared + docker create + start", baseline: warm.b.median, better: "lower" },
    { name: "sbx create --rebuild, COPY . Dockerfile (5,000 files, layers cached)", unit: "ms", value: rebuilt.a.median, baselineName: "docker build of the repo dir", baseline: rebuilt.b.median, better: "lower" },
  ]);
} finally {
  const builtImage = world.imageOf();
  for (const name of made) Bun.spawnSync(["bun", CLI, "rm", "--force", name], { cwd: repo, env, stdout: "ignore", stderr: "ignore" });
  const ids = Bun.spawnSync(["docker", "ps", "-aq", "--filter", "label=sbx.bench=1"]).stdout.toString().split("\n").filter(Boolean);
  if (ids.length) Bun.spawnSync(["docker", "rm", "-f", ...ids], { stdout: "ignore" });
  await world.stopDaemon();
  world.removeImage(builtImage);
  world.removeImage(manual);
  rmSync(root, { recursive: true, force: true });
}
