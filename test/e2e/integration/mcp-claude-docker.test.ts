// secret-bound, a real MCP client: Claude Code's own HTTP MCP client, inside a real Docker sandbox, reaches an MCP server
// bound to a secret (`sbx secret set MCP_TOKEN --host mcp.test --header 'Authorization: Bearer {}'`). Its config names
// the variable (`--header 'Authorization: Bearer ${MCP_TOKEN}'`, which Claude Code expands from its environment: the
// placeholder); `claude mcp list` connects to each server and runs MCP's initialize over Streamable HTTP, with no
// login and no model call. The server sees the value; the sandbox never holds it (environment, Claude's config, any
// file, the output). Hostile: the same config pointed at a host bound to another secret (terminated) or at a host
// with none (an opaque tunnel) sends the placeholder, never the value, and the server turns it away.
//
// Claude Code is the real package, served to `sbx run claude` by a mirror on loopback (SBX_NPM_REGISTRY, as a host
// with an npm mirror has it) from sbx's test cache, where scripts/test-claude.sh (run by install.sh) puts it: this
// test downloads nothing. The MCP server runs in a container on a network this test made, with a certificate from a
// CA the host trusts (NODE_EXTRA_CA_CERTS for the daemon); the daemon's lookup of `.test` names is the test seam.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { startFakeAgentLlm, type FakeAgentLlm } from "../../support/fake-agent-llm";
import { CLAUDE_PKG, CLAUDE_VERSION, haveClaude, noClaudeReason, startClaudeMirror } from "./claude-package";
import { acquireFixture, canRun, containerOf, dexec, docker, done, makeRepo, must, releaseFixture, removeRepoImages, skipReason, stopDaemon } from "./harness";
import { makeCerts, startSite, type Site, type TestCerts } from "./site";

const run = canRun && haveClaude;
const why = !canRun ? skipReason : noClaudeReason;
const PKG = CLAUDE_PKG;

const tag = Math.random().toString(36).slice(2, 8);
const VALUE = `mcp_sk_${tag}R3alValue0123456789`;
const OTHER = `oth_sk_${tag}Other0123456789ab`;
const ANTHROPIC = `sk-ant-api03-mcp${tag}${"a".repeat(24)}`;

// A Streamable HTTP MCP server on 443 for every name the test maps to it: POST /mcp takes JSON-RPC (initialize,
// notifications, tools/list, ping); GET (the optional SSE stream) is 405, as the spec allows. Only
// `Authorization: Bearer <the value>` is let in (401 otherwise, as a real server's token check); each request is
// logged with the Host it came for and the Authorization it carried.
const SITE_SCRIPT = `
const tls = { cert: Bun.file("/certs/c.pem"), key: Bun.file("/certs/k.pem") };
const want = "Bearer " + process.env.MCP_VALUE;
const rpc = (id, result) => Response.json({ jsonrpc: "2.0", id, result });
Bun.serve({ hostname: "0.0.0.0", port: 443, tls, async fetch(r) {
  const auth = r.headers.get("authorization") ?? "none";
  const body = r.method === "POST" ? await r.text() : "";
  let m = null;
  try { m = JSON.parse(body); } catch {}
  console.log("SAW " + r.headers.get("host") + " " + r.method + " " + new URL(r.url).pathname + " " + (m?.method ?? "-") + " " + auth);
  if (auth !== want) return new Response("unauthorized", { status: 401, headers: { "www-authenticate": "Bearer" } });
  if (r.method !== "POST") return new Response(null, { status: 405, headers: { allow: "POST" } });
  if (!m || m.jsonrpc !== "2.0") return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } }, { status: 400 });
  if (m.id === undefined) return new Response(null, { status: 202 });
  if (m.method === "initialize") return rpc(m.id, { protocolVersion: m.params?.protocolVersion ?? "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "sbx-test-mcp", version: "1.0.0" } });
  if (m.method === "tools/list") return rpc(m.id, { tools: [{ name: "sbx_echo", description: "echoes", inputSchema: { type: "object", properties: {} } }] });
  if (m.method === "ping") return rpc(m.id, {});
  return Response.json({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "method not found" } });
} });
console.log("site ready");
`;

let f: Fixture;
let repo = "";
let ip = "";
let certs: TestCerts;
let site: Site;
let env: Record<string, string>;
let llm: FakeAgentLlm;
let mirror: ReturnType<typeof Bun.serve> | undefined;
const mirrorAsked: string[] = [];
let placeholder = "";

function sbx(args: string[], stdin?: string) {
  return f.sbx(args, { cwd: repo, env, ...(stdin !== undefined ? { stdin } : {}) });
}

function sbxAsync(args: string[]) {
  return done(f.spawnSbx(args, { cwd: repo, env }));
}

function siteLog(): string {
  return site.logs();
}

/** The line `claude mcp list` prints for server `name`. */
function line(out: string, name: string): string {
  return out.split("\n").find((l) => l.startsWith(`${name}: `)) ?? `(no line for ${name} in:\n${out})`;
}

describe.skipIf(!run)(`secret-bound: Claude Code's MCP client in a Docker sandbox${run ? "" : ` (skipped: ${why})`}`, () => {
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `mcp-${tag}`);
    certs = makeCerts("sbxt-mcp", ["mcp.test", "other.test", "unbound.test"]);
    site = await startSite({ prefix: "sbxt-mcp", script: SITE_SCRIPT, certs, env: { MCP_VALUE: VALUE } });
    ip = site.ip;
    mirror = startClaudeMirror(mirrorAsked);
    // Claude Code needs a login to start (sbx refuses it otherwise); its LLM route goes to a fake that counts calls.
    llm = await startFakeAgentLlm();
    await stopDaemon(f.user);
    env = {
      SBX_TEST_ONLY_RESOLVE: JSON.stringify({ "mcp.test": ip, "other.test": ip, "unbound.test": ip }),
      NODE_EXTRA_CA_CERTS: certs.ca,
      SBX_NPM_REGISTRY: mirror.url.origin,
      SBX_TEST_ONLY_LLM_UPSTREAMS: JSON.stringify({ anthropic: llm.url }),
    };
    must(sbx(["secret", "set", "ANTHROPIC_API_KEY"], ANTHROPIC), "secret ANTHROPIC_API_KEY");
    must(sbx(["create", "t"]), "sbx create t");
    for (const h of ["mcp.test", "other.test", "unbound.test", ip]) must(sbx(["allow", h, "--sandbox", "t"]), `sbx allow ${h}`);
    must(sbx(["secret", "set", "MCP_TOKEN", "--host", "mcp.test", "--header", "Authorization: Bearer {}"], VALUE), "secret MCP_TOKEN");
    // other.test is terminated (a secret is bound there), but not MCP_TOKEN's host.
    must(sbx(["secret", "set", "OTHER_TOKEN", "--host", "other.test", "--header", "Authorization: Bearer {}"], OTHER), "secret OTHER_TOKEN");
  }, 240_000);

  afterAll(async () => {
    // What this test made outside the fixture goes even when sbx cannot be run any more (the fixture user gone).
    try {
      if (repo) {
        for (const s of ["MCP_TOKEN", "OTHER_TOKEN", "ANTHROPIC_API_KEY"]) sbx(["secret", "rm", s]);
        sbx(["rm", "--force", "t"]);
        removeRepoImages(repo);
      }
    } catch (e) {
      console.warn(`cleanup through sbx failed: ${e}`);
    }
    site?.remove();
    mirror?.stop(true);
    await llm?.stop();
    certs?.remove();
    if (f) await stopDaemon(f.user);
    if (f) releaseFixture();
  }, 60_000);

  test("`sbx run claude t -- mcp add` installs Claude Code from the mirror; its config names the variable, never a value", async () => {
    const add = (name: string, host: string) =>
      sbxAsync(["run", "claude", "t", "--", "mcp", "add", "--scope", "user", "--transport", "http", name, `https://${host}/mcp`, "--header", "Authorization: Bearer ${MCP_TOKEN}"]);
    const r = await add("bound", "mcp.test");
    expect(r.stderr).toContain(`fetching ${PKG}@${CLAUDE_VERSION}`);
    expect(r.code).toBe(0);
    expect(mirrorAsked).toContain("/claude.tgz");
    must(await add("elsewhere", "other.test"), "mcp add elsewhere");
    must(await add("unbound", "unbound.test"), "mcp add unbound");
    placeholder = must(sbx(["run", "t", "--", "sh", "-c", 'printf %s "$MCP_TOKEN"']), "echo $MCP_TOKEN").stdout;
    // Shaped like the value (no issuer's prefix is known for it): each letter or digit of its class, `_` in place.
    const shape = (v: string) => v.replace(/[a-z]/g, "a").replace(/[A-Z]/g, "A").replace(/[0-9]/g, "0");
    expect(shape(placeholder)).toBe(shape(VALUE));
    expect(placeholder).not.toBe(VALUE);
    const cfg = dexec(f, containerOf(realpathSync(repo), "t"), ["sh", "-c", 'cat "$HOME/.claude.json"']).stdout;
    const servers = (JSON.parse(cfg) as { mcpServers?: Record<string, { type: string; url: string; headers: Record<string, string> }> }).mcpServers ?? {};
    expect(servers.bound).toEqual({ type: "http", url: "https://mcp.test/mcp", headers: { Authorization: "Bearer ${MCP_TOKEN}" } });
    expect(cfg).not.toContain(VALUE);
    expect(cfg).not.toContain(placeholder);
    // The host's own MCP server (the fixture's ~/.claude.json) came in without its token.
    expect(cfg).not.toContain("ghp_fixture_not_inside");
  }, 300_000);

  test("`claude mcp list` connects: the MCP server saw the value through initialize, notifications and tools/list; no model call", async () => {
    expect(placeholder).not.toBe("");
    const calls = llm.requests.length;
    const r = await sbxAsync(["run", "claude", "t", "--", "mcp", "list"]);
    expect(r.code).toBe(0);
    expect(line(r.stdout, "bound")).toMatch(/^bound: https:\/\/mcp\.test\/mcp \(HTTP\) - ✔ Connected/);
    const log = siteLog();
    for (const m of ["initialize", "notifications/initialized", "tools/list"]) expect(log).toContain(`SAW mcp.test POST /mcp ${m} Bearer ${VALUE}`);
    expect(log).not.toContain(`SAW mcp.test POST /mcp initialize Bearer ${placeholder}`);
    expect(r.stdout + r.stderr).not.toContain(VALUE);
    expect(llm.requests.slice(calls).filter((q) => q.path.startsWith("/v1/messages"))).toEqual([]);
  }, 120_000);

  test("no-secret-inside: the value is in no environment, no file, no process of the sandbox; `claude mcp get` shows the variable", async () => {
    const ctr = containerOf(realpathSync(repo), "t");
    const get = must(await sbxAsync(["run", "claude", "t", "--", "mcp", "get", "bound"]), "mcp get");
    expect(get.stdout).toContain("Authorization: Bearer ${MCP_TOKEN}");
    expect(get.stdout + get.stderr).not.toContain(VALUE);
    expect(must(sbx(["run", "t", "--", "env"]), "env").stdout).not.toContain(VALUE);
    // The value is passed in two halves and searched for from a file under /dev (not scanned): no process here, the
    // scan's own included, holds it whole in its arguments.
    const half = VALUE.length >> 1;
    const script = 'p=$(mktemp -p /dev/shm); printf %s%s "$1" "$2" > "$p"; grep -c -F -f "$p" "$p"; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | grep -c -F -f "$p"; grep -rsl -F -f "$p" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; rm -f "$p"; true';
    const scan = dexec(f, ctr, ["sh", "-c", script, "scan", VALUE.slice(0, half), VALUE.slice(half)], { timeoutMs: 120_000 });
    // The search finds the value where it is (its own file), then in no process and no file.
    expect(scan.stdout.trim()).toBe("1\n0");
  }, 180_000);

  test("secret-bound hostile: the same config at a host bound to another secret sends the placeholder; the server turns it away", async () => {
    expect(placeholder).not.toBe("");
    const r = await sbxAsync(["run", "claude", "t", "--", "mcp", "list"]);
    expect(line(r.stdout, "elsewhere")).toMatch(/^elsewhere: https:\/\/other\.test\/mcp \(HTTP\) - ✘ Failed to connect/);
    const log = siteLog();
    expect(log).toContain(`SAW other.test POST /mcp initialize Bearer ${placeholder}`);
    expect(log).not.toMatch(new RegExp(`SAW other\\.test .*(${VALUE}|${OTHER})`));
    const audit = must(sbx(["logs", "--sandbox", "t", "--json"]), "sbx logs").stdout;
    expect(audit).not.toContain(VALUE);
    expect(audit).not.toContain(OTHER);
    // Audited as a refused use, by name and host.
    const rows = audit.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { action: string; detail: { secret?: string; host?: string; reason?: string } });
    expect(rows.some((e) => e.action === "secret.outside" && e.detail.secret === "MCP_TOKEN" && e.detail.host === "other.test" && e.detail.reason?.includes("not one of its hosts"))).toBe(true);
  }, 120_000);

  test("secret-bound hostile: at a host with no secret (an opaque tunnel sbx does not open) the server gets the placeholder", async () => {
    // Not terminated, so Claude Code meets the server's own certificate: it is told to trust the world's CA there,
    // beside what sbx gives the session.
    expect(placeholder).not.toBe("");
    // As the agent runs (trusting what sbx gives the session): the server's own certificate, which it does not trust;
    // a host sbx terminated would have shown one from sbx's CA, which it does.
    const plain = await sbxAsync(["run", "claude", "t", "--", "mcp", "list"]);
    expect(line(plain.stdout, "unbound")).toMatch(/✘ Failed to connect — UNABLE_TO_VERIFY_LEAF_SIGNATURE/);
    const pem = readFileSync(certs.ca, "utf8");
    const script = 'printf %s "$1" > /tmp/world.pem && cat "$NODE_EXTRA_CA_CERTS" /tmp/world.pem > /tmp/both.pem && NODE_EXTRA_CA_CERTS=/tmp/both.pem /opt/sbx/agents/bin/claude mcp list';
    const r = await sbxAsync(["run", "t", "--", "sh", "-c", script, "sh", pem]);
    expect(r.code).toBe(0);
    expect(line(r.stdout, "unbound")).toMatch(/^unbound: https:\/\/unbound\.test\/mcp \(HTTP\) - ✘ Failed to connect/);
    expect(line(r.stdout, "unbound")).toContain("401");
    const log = siteLog();
    expect(log).toContain(`SAW unbound.test POST /mcp initialize Bearer ${placeholder}`);
    expect(log).not.toMatch(new RegExp(`SAW unbound\\.test .*${VALUE}`));
    expect(r.stdout + r.stderr).not.toContain(VALUE);
  }, 120_000);

  test("sbx logs names MCP_TOKEN's use at mcp.test, never its value", () => {
    const logs = must(sbx(["logs", "--sandbox", "t", "--json"]), "sbx logs").stdout;
    expect(logs).toContain("secret.used");
    expect(logs).toMatch(/"secret":\s*"MCP_TOKEN"/);
    expect(logs).not.toContain(VALUE);
  });
});
