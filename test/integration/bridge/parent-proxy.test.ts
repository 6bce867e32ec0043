// The bridge's git and gh behind a company's proxy (test/support/fake-parent.ts on loopback, the only one that knows
// where forge.test is, and which wants credentials): each call is lent the parent through sbx's relay for that call
// (sys/parent-relay.ts), so the real credentials never enter git's or gh's environment; what a formatter the sandbox
// chose can print there is a one-call password, good only for the forge and dead when the call ends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBridgeApp } from "../../../src/bridge/server";
import { NO_BRIDGE_SETTINGS } from "../../../src/core/bridge-settings";
import { parentFromConfig } from "../../../src/core/parent-proxy";
import { createExec } from "../../../src/sys/exec";
import { ParentRouter } from "../../../src/sys/parent";
import { ParentRelay } from "../../../src/sys/parent-relay";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";
import { startGitHttpServer, type GitHttpServer } from "../../support/git-http-server";

const hasGh = Bun.which("gh") !== null;
const TOKEN = "ghp_ForgeTokenBehindProxy0123456789abc";
const PASSWORD = "bridge-Pa55word";
const PATH = process.env.PATH ?? "/usr/bin:/bin";
let root = "";
let server: GitHttpServer;
let parent: FakeParent;
let relay: ParentRelay;
let caFile = "";
const apiSaw: string[] = [];

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-parent-bridge-")));
  const ca = await makeCa("company forge CA");
  const leaf = await issueLeaf(await loadCa(ca.certPem, ca.keyPem), ["forge.test"]);
  caFile = join(root, "ca.pem");
  writeFileSync(caFile, ca.certPem);
  server = startGitHttpServer(join(root, "srv"), TOKEN, { cert: leaf.certPem, key: leaf.keyPem }, async (req, u) => {
    apiSaw.push(`${req.method} ${u.pathname} ${req.headers.get("authorization") ?? "none"}`);
    const body = req.method === "POST" ? await req.text() : "";
    if (u.pathname === "/api/graphql" && body.includes("PullRequestList")) {
      return Response.json({ data: { repository: { pullRequests: { totalCount: 1, nodes: [{ number: 7, title: "Through the proxy", url: "https://forge.test/pr/7", state: "OPEN", headRefName: "f", isDraft: false, author: { login: "ann" } }], pageInfo: { hasNextPage: false, endCursor: null } } } } });
    }
    return Response.json({ message: "Not Found" }, { status: 404 });
  });
  await server.createRepo("acme/proj");
  parent = await startFakeParent({ sites: { "forge.test": Number(new URL(server.url).port) }, credentials: `corp:${PASSWORD}` });
  relay = new ParentRelay(new ParentRouter(parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN" }).settings, (n) => (n === "PROXY_LOGIN" ? `corp:${PASSWORD}` : null)));
});
afterAll(async () => {
  relay.close();
  await parent.close();
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});

function bridge() {
  const repo = join(root, `host-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(repo);
  const git = (...a: string[]) => Bun.spawnSync(["git", "-C", repo, ...a], { env: { PATH, HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1" } });
  git("init", "-q", "-b", "main");
  git("remote", "add", "origin", "https://forge.test/acme/proj.git");
  const ws = `${repo}-clone`;
  mkdirSync(ws);
  const app = createBridgeApp({
    sandbox: { id: "p1", name: "demo", workspace: ws, workspaceView: "/home/u/proj", repo },
    gateDir: `${repo}-gate`,
    secrets: () => ({ GIT_TOKEN: TOKEN }),
    audit: () => undefined,
    exec: createExec({ PATH }),
    path: PATH,
    tlsEnv: { SSL_CERT_FILE: caFile },
    settings: () => NO_BRIDGE_SETTINGS,
    parent: relay,
  });
  return async (tool: "git" | "gh", args: string[]) => {
    const res = await app.request("/v1/run", { method: "POST", body: `${JSON.stringify({ tool, args, cwd: "/home/u/proj", branch: "main" })}\n` });
    const frames = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as { t: string; d?: string; code?: number });
    return { out: frames.filter((f) => f.t === "out").map((f) => f.d).join(""), err: frames.filter((f) => f.t === "err").map((f) => f.d).join(""), code: frames.at(-1)?.code };
  };
}

const corp = `Basic ${Buffer.from(`corp:${PASSWORD}`).toString("base64")}`;

/** curl through a proxy URL to https://<host>/: its exit code and what it said (async: the relay is in this process). */
async function curlVia(proxy: string, host: string): Promise<{ code: number; err: string }> {
  const p = Bun.spawn(["curl", "-sS", "-o", "/dev/null", "--max-time", "5", "-x", proxy, "--cacert", caFile, `https://${host}/acme/proj.git/info/refs?service=git-upload-pack`], { stdout: "ignore", stderr: "pipe", env: { PATH } });
  const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  return { code, err };
}

/** A raw CONNECT through a relay URL (http://user:password@host:port): the status the relay answers. */
async function connectVia(proxy: string, target: string): Promise<number> {
  const u = new URL(proxy);
  const auth = Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString("base64");
  const { promise, resolve } = Promise.withResolvers<number>();
  let got = "";
  const sock = await Bun.connect({
    hostname: u.hostname,
    port: Number(u.port),
    socket: {
      open: (s) => void s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`),
      data: (s, d) => {
        got += d.toString("latin1");
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(got);
        if (m) {
          resolve(Number(m[1]));
          s.end();
        }
      },
      close: () => resolve(0),
      error: () => resolve(0),
    },
  });
  const status = await promise;
  sock.end();
  return status;
}

describe("parent-proxy through the bridge: git and gh on the host go out through the company's proxy", () => {
  test("git ls-remote reaches the forge through the parent, with the parent's real credentials; none stays lent", async () => {
    parent.seen.length = 0;
    const r = await bridge()("git", ["ls-remote", "origin"]);
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
    expect(parent.seen.map((s) => [s.target, s.authorization])).toEqual([["forge.test:443", corp]]);
    expect(relay.active()).toBe(0);
  });

  test.skipIf(!hasGh)("gh pr list reaches the forge's API through the parent; its token authenticated gh; none stays lent", async () => {
    parent.seen.length = 0;
    apiSaw.length = 0;
    const r = await bridge()("gh", ["pr", "list", "--json", "number,title", "--jq", ".[].title"]);
    expect(r).toMatchObject({ code: 0, out: "Through the proxy\n" });
    expect(parent.seen.every((s) => s.target === "forge.test:443" && s.authorization === corp)).toBe(true);
    expect(apiSaw.some((a) => a.endsWith(`token ${TOKEN}`))).toBe(true);
    expect(relay.active()).toBe(0);
  });

  test.skipIf(!hasGh)("formatter-reads-of-the-environment: gh's --jq '$ENV' shows a one-call relay password, never the parent's; it is dead after the call", async () => {
    const call = bridge();
    const plain = await call("gh", ["pr", "list", "--json", "number", "--jq", "$ENV.HTTPS_PROXY"]);
    expect(plain.out.trim()).toMatch(/^http:\/\/sbx:\[REDACTED\]@127\.0\.0\.1:\d+$/); // the bridge's redaction, on top
    // Encoded, it gets past redaction: what it shows is still only the relay's one-call password.
    const r = await call("gh", ["pr", "list", "--json", "number", "--jq", "$ENV | to_entries | map(.value) | join(\" \") | @base64"]);
    expect(r.code).toBe(0);
    const all = Buffer.from(r.out.trim(), "base64").toString();
    expect(all).not.toContain(PASSWORD);
    expect(all).not.toContain(corp.slice(6));
    const leaked = /http:\/\/sbx:[A-Za-z0-9_-]+@127\.0\.0\.1:\d+/.exec(all)?.[0] ?? "";
    expect(leaked).not.toBe("");
    parent.seen.length = 0;
    const after = await curlVia(leaked, "forge.test");
    expect(after.code).not.toBe(0);
    expect(after.err).toContain("407");
    expect(parent.seen).toEqual([]);
  });
});

describe("parent-proxy relay: what it lends is for one host, one call, sbx's own tools", () => {
  test("a lease reaches its host through the parent; another host, no password or a wrong one never reaches the parent", async () => {
    parent.seen.length = 0;
    const lease = await relay.lease("https://forge.test/proj.git");
    try {
      const url = lease.env.HTTPS_PROXY!;
      expect(url).not.toContain(PASSWORD);
      expect(lease.env.https_proxy).toBe(url);
      expect((await curlVia(url, "forge.test")).code).toBe(0);
      const other = await curlVia(url, "evil.test");
      expect(other.err).toContain("403");
      const bare = await curlVia(url.replace(/\/\/sbx:[^@]+@/, "//"), "forge.test");
      expect(bare.err).toContain("407");
      const wrong = await curlVia(url.replace(/sbx:([^@]+)@/, "sbx:x$1@"), "forge.test");
      expect(wrong.err).toContain("407");
      expect(parent.seen.map((s) => [s.target, s.authorization])).toEqual([["forge.test:443", corp]]);
    } finally {
      lease.release();
    }
    expect(relay.active()).toBe(0);
  });

  test("parent-proxy-scope: a lease is for its URL's port (443 when none), on its host and names under it: another port of the same host never reaches the parent", async () => {
    parent.seen.length = 0;
    const lease = await relay.lease("https://forge.test/proj.git");
    try {
      const url = lease.env.HTTPS_PROXY!;
      for (const target of ["forge.test:22", "forge.test:6379", "api.forge.test:8443"]) {
        const r = await connectVia(url, target);
        expect({ target, status: r }).toEqual({ target, status: 403 });
      }
      expect(await connectVia(url, "api.forge.test:443")).not.toBe(403);
      const odd = await relay.lease("https://forge.test:8443/proj.git");
      try {
        expect(await connectVia(odd.env.HTTPS_PROXY!, "forge.test:443")).toBe(403);
      } finally {
        odd.release();
      }
      expect(parent.seen.map((s) => s.target)).toEqual(["api.forge.test:443"]);
    } finally {
      lease.release();
    }
  });

  test("bounded: the relay holds at most 64 connections; one more is cut, and the held ones still work", async () => {
    const lease = await relay.lease("https://forge.test/proj.git");
    const held: import("bun").Socket[] = [];
    try {
      const port = Number(new URL(lease.env.HTTPS_PROXY!).port);
      for (let i = 0; i < 64; i++) held.push(await Bun.connect({ hostname: "127.0.0.1", port, socket: { data: () => undefined } }));
      const { promise, resolve } = Promise.withResolvers<string>();
      await Bun.connect({ hostname: "127.0.0.1", port, socket: { open: (s) => void s.write("CONNECT forge.test:443 HTTP/1.1\r\n\r\n"), data: () => resolve("answered"), close: () => resolve("cut"), error: () => resolve("cut") } });
      expect(await promise).toBe("cut");
      held.pop()!.end();
      await Bun.sleep(50);
      expect(await connectVia(lease.env.HTTPS_PROXY!, "forge.test:22")).toBe(403);
    } finally {
      for (const h of held) h.end();
      lease.release();
    }
  });

  test("a parent without credentials is named as it is (no relay); a host NO_PROXY covers gets no proxy at all", async () => {
    const plain = new ParentRelay(new ParentRouter(parentFromConfig({ url: "http://proxy.corp:3128", noProxy: [".internal"] }).settings));
    expect((await plain.lease("https://forge.test/x")).env).toEqual({ HTTPS_PROXY: "http://proxy.corp:3128", https_proxy: "http://proxy.corp:3128", HTTP_PROXY: "http://proxy.corp:3128", http_proxy: "http://proxy.corp:3128", NO_PROXY: ".internal", no_proxy: ".internal" });
    expect((await plain.lease("https://git.internal/x")).env).toEqual({});
    expect(plain.active()).toBe(0);
  });
});
