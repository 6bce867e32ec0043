// What is particular to a kind lives behind its driver: outside src/drivers/ nothing compares a sandbox's kind (or the
// kind tag of its spec's options, or a driver's class); callers ask the driver's capabilities (DriverCaps) instead.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");
const KIND = String.raw`"(?:docker|linux-user|macos|fake)"`;
const CHECKS: readonly RegExp[] = [
  new RegExp(String.raw`(?:===|!==)\s*${KIND}`),
  new RegExp(String.raw`${KIND}\s*(?:===|!==)`),
  new RegExp(String.raw`case\s+${KIND}\s*:`),
  new RegExp(String.raw`(?:new Set|\.includes)\(\s*\[?\s*${KIND}`),
  /\.driver\s*(?:===|!==)/, // the spec's options tag, which only its driver reads
  /instanceof\s+(?:DockerDriver|UserAccountDriver|DockerBackend|LinuxUserBackend|MacosBackend)\b/,
];

/** Files outside src/drivers/ that name kinds anyway, and why. */
const EXCEPTIONS: Record<string, string> = {
  "core/backend-kind.ts": "parses the words `--backend` takes (docker, user, linux-user, macos) for the CLI, which loads no driver",
};

/** Every kind check outside src/drivers/, as `file:line: text`. */
function kindChecks(files: { path: string; text: string }[]): string[] {
  return files.flatMap(({ path, text }) => {
    if (path.startsWith("drivers/") || EXCEPTIONS[path]) return [];
    return text.split("\n").flatMap((line, i) => (CHECKS.some((re) => re.test(line)) ? [`${path}:${i + 1}: ${line.trim()}`] : []));
  });
}

test("no kind check outside src/drivers/: callers ask a driver's capabilities", () => {
  const files = [...new Bun.Glob("**/*.ts").scanSync(SRC)].map((path) => ({ path, text: readFileSync(join(SRC, path), "utf8") }));
  expect(kindChecks(files)).toEqual([]);
});

test("the check sees the checks there were (a guard choosing by kind, the quick path, a spec's options tag, a kind set)", () => {
  const seen = kindChecks([
    { path: "guards/proxy.ts", text: 'const lib = ctx.sandbox.backend === "docker" || ctx.sandbox.backend === "linux-user" ? fdPassing() : null;' },
    { path: "client/quick.ts", text: 'if (view.backend !== "docker") return null;' },
    { path: "guards/loopback.ts", text: 'const p = ctx.spec.options.driver === "user" ? ctx.spec.options.proxyPort : undefined;\nexport const LOOPBACK_BACKENDS = new Set(["linux-user", "macos"]);' },
    { path: "daemon/x.ts", text: 'switch (row.backend) { case "macos": break; }' },
    { path: "drivers/docker/driver.ts", text: 'if (kind === "docker") {}' },
  ]);
  expect(seen.map((s) => s.split(":").slice(0, 2).join(":"))).toEqual(["guards/proxy.ts:1", "client/quick.ts:1", "guards/loopback.ts:1", "guards/loopback.ts:2", "daemon/x.ts:1"]);
});

test("every exception names a file that exists and says why", () => {
  for (const [f, why] of Object.entries(EXCEPTIONS)) {
    expect(readFileSync(join(SRC, f), "utf8").length).toBeGreaterThan(0);
    expect(why.length).toBeGreaterThan(20);
  }
});
