// credential-scope for forge tokens: a fallback token (GIT_TOKEN) goes only to the hosts of the host repo's own
// remotes. A repository on another host that the sandbox asked for and the user approved (`--allow-repo`, or an
// approval of `gh -R HOST/…`) gets that host's own token (GIT_TOKEN_<HOST>) or none: the bridge says which to set, and
// the other host, a server on 127.0.0.1 that records every Authorization it is sent, never sees the fallback.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBridgeApp } from "../../../src/bridge/server";
import { hostTokenName } from "../../../src/core/credential-scope";
import { NO_BRIDGE_SETTINGS, type BridgeSettings } from "../../../src/core/bridge-settings";
import { makeSiteCert } from "../../../src/demo/cert";
import { createExec } from "../../../src/sys/exec";
import { startGitHttpServer, type GitHttpServer } from "../../support/git-http-server";
import { makeHarness, type Harness } from "./harness";

const PATH = process.env.PATH ?? "/usr/bin:/bin";
const hasGh = Bun.which("gh") !== null;

describe("credential-scope: git's fallback token stays on the host repo's own hosts", () => {
  let h: Harness;
  let other: GitHttpServer;
  let otherUrl = "";
  let settings: BridgeSettings = NO_BRIDGE_SETTINGS;
  const OTHER_TOKEN = "tok-other-host-own-0123456789";

  beforeAll(async () => {
    h = await makeHarness({ settings: () => settings });
    other = startGitHttpServer(join(h.root, "other-srv"), OTHER_TOKEN);
    await other.createRepo("theirs");
    otherUrl = other.repoUrl("theirs");
    // What the user approved when the sandbox asked for that repository.
    settings = { ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"], repos: [otherUrl] };
  });
  afterAll(async () => {
    await other?.stop();
    await h?.stop();
  });

  test("an approved repository on another host never gets GIT_TOKEN; the refusal names that host's own token", async () => {
    const runs = [];
    for (const args of [["ls-remote", otherUrl], ["fetch", otherUrl, "main"]]) runs.push(await h.shim(args));
    expect(other.requests.length).toBeGreaterThan(0);
    expect(other.requests.filter((q) => (q.authorization ?? "") !== "" && atob(q.authorization!.slice(6)).includes(h.token))).toEqual([]);
    for (const r of runs) {
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(hostTokenName(new URL(otherUrl).host));
    }
  });

  test("the host repo's own remote still gets it (control)", async () => {
    const before = h.upstream.requests.length;
    const r = await h.shim(["ls-remote", "origin"]);
    expect(r.code).toBe(0);
    expect(h.upstream.requests.slice(before).some((q) => q.authorized)).toBe(true);
  });
});

describe.skipIf(!hasGh)(`credential-scope: gh's fallback token stays on the host repo's own hosts${hasGh ? "" : " (skipped: gh is not installed)"}`, () => {
  let root = "";
  let certFile = "";
  const servers: Array<ReturnType<typeof Bun.serve>> = [];
  const seen: Record<string, Array<string | null>> = {};
  const TOKEN = "ghp_GenericFallbackToken0123456789abcdef";
  const OWN = "ghp_OtherHostsOwnToken0123456789abcdefgh";
  let origin = "";
  let elsewhere = "";

  beforeAll(async () => {
    if (!hasGh) return;
    root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-gh-scope-")));
    const cert = await makeSiteCert(createExec({ PATH }), root, ["127.0.0.1"]);
    certFile = cert.certFile;
    // Two GitHub Enterprise doubles on two ports: two hosts, as gh and the token table see them.
    for (let i = 0; i < 2; i++) {
      const s = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        tls: { cert: cert.certPem, key: cert.keyPem },
        async fetch(req) {
          (seen[`127.0.0.1:${s.port}`] ??= []).push(req.headers.get("authorization"));
          const body = req.method === "POST" ? await req.text() : "";
          if (new URL(req.url).pathname === "/api/graphql" && body.includes("PullRequestList")) {
            return Response.json({ data: { repository: { pullRequests: { totalCount: 0, nodes: [], pageInfo: { hasNextPage: false, endCursor: null } } } } });
          }
          return Response.json({ message: "Not Found" }, { status: 404 });
        },
      });
      servers.push(s);
    }
    origin = `127.0.0.1:${servers[0]!.port}`;
    elsewhere = `127.0.0.1:${servers[1]!.port}`;
  });
  afterAll(() => {
    for (const s of servers) s.stop(true);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  function bridge(secrets: Record<string, string>) {
    const repo = join(root, `host-${Math.random().toString(36).slice(2, 8)}`);
    mkdirSync(repo);
    const git = (...a: string[]) => Bun.spawnSync(["git", "-C", repo, ...a], { env: { PATH, HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1" } });
    git("init", "-q", "-b", "main");
    git("remote", "add", "origin", `https://${origin}/acme/widgets.git`);
    const ws = `${repo}-clone`;
    mkdirSync(ws);
    const app = createBridgeApp({
      sandbox: { id: "id1", name: "demo", workspace: ws, workspaceView: "/home/u/widgets", repo },
      gateDir: `${repo}-gate`,
      secrets: () => secrets,
      audit: () => undefined,
      exec: createExec({ PATH }),
      path: PATH,
      tlsEnv: { SSL_CERT_FILE: certFile },
      // What the user approved when the sandbox ran `gh pr list -R 127.0.0.1:<other>/evil/repo`.
      settings: () => ({ ...NO_BRIDGE_SETTINGS, repos: [`https://${elsewhere}/evil/repo`] }),
    });
    return async (args: string[]) => {
      const res = await app.request("/v1/run", { method: "POST", body: `${JSON.stringify({ tool: "gh", args, cwd: "/home/u/widgets", branch: "feature" })}\n` });
      const frames = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as { t: string; d?: string; code?: number });
      return { err: frames.filter((f) => f.t === "err").map((f) => f.d).join(""), code: frames.at(-1)?.code };
    };
  }

  test("gh -R another host: GIT_TOKEN is not sent there; the refusal names the token to set", async () => {
    const call = bridge({ GIT_TOKEN: TOKEN });
    const r = await call(["pr", "list", "-R", `${elsewhere}/evil/repo`, "--json", "number"]);
    expect((seen[elsewhere] ?? []).filter((a) => a?.includes(TOKEN))).toEqual([]);
    expect(r.code).toBe(77);
    expect(r.err).toContain(hostTokenName(elsewhere));
  });

  test("with that host's own token set, it goes there, and only it (control)", async () => {
    const call = bridge({ GIT_TOKEN: TOKEN, [hostTokenName(elsewhere)]: OWN });
    const r = await call(["pr", "list", "-R", `${elsewhere}/evil/repo`, "--json", "number"]);
    expect(r.code).toBe(0);
    expect(seen[elsewhere]).toContain(`token ${OWN}`);
    expect((seen[elsewhere] ?? []).filter((a) => a?.includes(TOKEN))).toEqual([]);
  });

  test("the host repo's own forge still gets GIT_TOKEN (control)", async () => {
    const r = await bridge({ GIT_TOKEN: TOKEN })(["pr", "list", "--json", "number"]);
    expect(r.code).toBe(0);
    expect(seen[origin]).toContain(`token ${TOKEN}`);
  });
});
