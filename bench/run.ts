// Runs every benchmark (bench/*.bench.ts, or the ones named) one after another and passes their output through.
import { readdirSync } from "node:fs";
import { join } from "node:path";

const only = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const flags = process.argv.slice(2).filter((a) => a.startsWith("-"));
const files = readdirSync(import.meta.dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();
let failed = 0;
for (const f of files) {
  console.log(`── ${f}`);
  const p = Bun.spawn([process.execPath, join(import.meta.dir, f), ...flags], { stdio: ["ignore", "inherit", "inherit"] });
  if ((await p.exited) !== 0) {
    failed++;
    console.log(`   ${f} failed`);
  }
}
process.exit(failed ? 1 : 0);
