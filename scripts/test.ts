// The test command (`bun run test`): runs bun test with a JUnit report and prints `N passed, N failed, N skipped`.
// Extra arguments go to bun test (paths, -t filters). Exit code: bun test's.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Without the session bus: a test's sbx must never store into, or move secrets into, the person's own keyring (a test
// that needs a Secret Service starts its own bus and keyring).
const { DBUS_SESSION_BUS_ADDRESS: _bus, ...env } = process.env;
const dir = mkdtempSync(join(tmpdir(), "sbx-junit-"));

/**
 * The whole suite runs in two lanes at once: the end-to-end files (real engines, users and namespaces: mostly waiting
 * on them, and they share one Docker fixture, so they stay one process, one file at a time) beside every other file
 * (mostly CPU). Measured on the 2-core CI machine: <LANES>. With arguments, or SBX_TEST_LANES=1, one process runs
 * what was asked, as bun test would.
 */
type Lane = { name: string; args: string[] };
function lanes(): Lane[] {
  const asked = process.argv.slice(2);
  if (asked.length > 0 || process.env.SBX_TEST_LANES === "1") return [{ name: "", args: asked }];
  const rest = [...new Bun.Glob("**/*.test.ts").scanSync({ cwd: "test" })]
    .filter((f) => !f.startsWith("e2e/") && !f.includes("node_modules/"))
    .sort()
    .map((f) => `./test/${f}`);
  return [{ name: "e2e", args: ["./test/e2e"] }, { name: "rest", args: rest }];
}

/** Copies a lane's output through, a line at a time, each line marked with its lane when there are two. */
async function relay(stream: ReadableStream<Uint8Array>, to: NodeJS.WriteStream, mark: string): Promise<void> {
  const decoder = new TextDecoder();
  let held = "";
  for await (const chunk of stream) {
    held += decoder.decode(chunk, { stream: true });
    const end = held.lastIndexOf("\n");
    if (end < 0) continue;
    to.write(held.slice(0, end + 1).replace(/^(?=.)/gm, mark));
    held = held.slice(end + 1);
  }
  if (held) to.write(`${mark}${held}\n`);
}

async function runLane(lane: Lane, i: number): Promise<{ code: number; report: string }> {
  const report = join(dir, `junit-${i}.xml`);
  // 30 s a test (bun's default is 5 s): git-backed tests take 2-5 s on a loaded machine, and a hung test still ends
  // soon. Here because Bun 1.4.5 ignores bunfig.toml's timeout and a preload's setDefaultTimeout outlasts only the
  // first file.
  const proc = Bun.spawn(
    [process.execPath, "test", "--timeout=30000", "--reporter=junit", `--reporter-outfile=${report}`, ...lane.args],
    { stdio: ["ignore", lane.name ? "pipe" : "inherit", lane.name ? "pipe" : "inherit"], env },
  );
  const mark = lane.name ? `[${lane.name}] ` : "";
  const copies = lane.name ? [relay(proc.stdout as ReadableStream<Uint8Array>, process.stdout, mark), relay(proc.stderr as ReadableStream<Uint8Array>, process.stderr, mark)] : [];
  const code = await proc.exited;
  await Promise.all(copies);
  return { code, report };
}

const results = await Promise.all(lanes().map(runLane));
const code = results.find((r) => r.code !== 0)?.code ?? 0;

let passed = 0;
let failed = 0;
let skipped = 0;
const skippedSuites = new Set<string>();
const failedTests: { name: string; why: string }[] = [];
/** XML attribute text back to what bun wrote. */
const unescape = (s: string) =>
  s.replaceAll("&#10;", "\n").replaceAll("&quot;", '"').replaceAll("&apos;", "'").replaceAll("&gt;", ">").replaceAll("&lt;", "<").replaceAll("&amp;", "&");
for (const r of results) {
  let xml = "";
  try {
    xml = readFileSync(r.report, "utf8");
  } catch {
    console.error("test: bun test wrote no JUnit report; counting the run as failed");
    failed++;
  }
  // Each <testcase …/> or <testcase …>…</testcase>; a <failure> or <error> inside marks it failed, <skipped> skipped.
  for (const m of xml.matchAll(/<testcase\b[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const body = m[2] ?? "";
    if (/<(failure|error)\b/.test(body)) {
      failed++;
      const attr = (k: string) => unescape(new RegExp(`${k}="([^"]*)"`).exec(m[0])?.[1] ?? "");
      // Why, from the failure's message: CI keeps only the log's tail, far below bun's own report of it.
      const why = unescape(/<(?:failure|error)\b[^>]*?message="([^"]*)"/.exec(body)?.[1] ?? "");
      failedTests.push({ name: `${attr("classname")} > ${attr("name")}`, why });
    }
    else if (/<skipped\b/.test(body)) {
      skipped++;
      skippedSuites.add(/classname="([^"]*)"/.exec(m[0])?.[1] || "(top level)");
    }
    else passed++;
  }
}
rmSync(dir, { recursive: true, force: true });
if (code !== 0 && failed === 0) failed = 1; // a crash outside any test still fails the run
// Gated suites say why in their titles; list them so a skip is never silent.
for (const s of skippedSuites) console.log(`skipped: ${unescape(s)}`);
// And the failures by name and why, next to the summary (bun's own lines are far up a long log), 40 lines at most each.
for (const t of failedTests) {
  console.log(`failed: ${t.name}`);
  const lines = t.why.trimEnd().split("\n");
  for (const l of lines.slice(0, 40)) console.log(`    ${l}`);
  if (lines.length > 40) console.log(`    … ${lines.length - 40} more lines`);
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(code === 0 && failed === 0 ? 0 : code || 1);
