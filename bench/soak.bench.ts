// Soak at full size: 8 sandboxes created in parallel, 10,000 proxied requests, 1,000 bridge calls, 200 attach/detach
// cycles, the daemon kill -9'ed 10 times at random points. Runs the e2e soak test with SBX_SOAK=long (real Docker,
// root) and passes on its figures: the daemon's fds and RSS before and after, and how long it all took.
// Not a test of speed: the test's own checks (no leak, no lost audit row, nothing left behind) are what fail it.
import { join } from "node:path";

const test = join(import.meta.dir, "..", "test", "e2e", "docker", "soak.test.ts");
const p = Bun.spawn([process.execPath, "test", test], {
  env: { ...process.env, SBX_SOAK: "long" },
  stdout: "pipe",
  stderr: "pipe",
});
const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
const lines = `${out}\n${err}`.split("\n");
for (const l of lines) if (l.startsWith("soak:") || /^\((pass|fail|skip)\)/.test(l) || /skipped/.test(l)) console.log(`   ${l}`);
if (code !== 0) {
  console.log(lines.filter((l) => /error|Expected|Received/.test(l)).slice(0, 20).join("\n"));
  process.exit(1);
}
