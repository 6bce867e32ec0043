// The bridge's git and gh behind a company's proxy (test/support/fake-parent.ts on loopback, the only one that knows
// where forge.test is, and which wants credentials): each call is lent the parent through sbx's relay for that call
// (sys/parent-relay.ts), so the real credentials never enter git's or gh's environment; what a formatter the sandbox
// chose can print there is a one-call password, good only for the forge and dead when the call ends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBridgeApp, startBridge, type StartedBridge } from "../../../src/bridge/server";
import { NO_BRIDGE_SETTINGS } from "../../../src/core/bridge-settings";
import { parentFromConfig } from "../../../src/core/parent-proxy";
import { createExec } from "../../../src/sys/exec";
import { ParentRouter } from "../../../src/sys/parent";
import { ParentRelay } from "../../../src/sys/parent-relay";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";
import { startGitHttpServer, type GitHttpServer } from "../../support/git-http-server";
import { commitOn, git as gitIn, refIn, sh, SHIMS } from "./harness";

const hasGh = Bun.which("gh") !== null;
const TOKEN = "ghp_ForgeTokenBehindProxy0123456789abc";
const PASSWORD = "bridge-Pa55word";
const PATH = process.env.PATH ?? "/usr/bin:/bin";
let root = "";
let server: GitHttpServer;
/** A forge inside the company that speaks plain http:// (its git through the parent as absolute-form requests). */
let plainServer: GitHttpServer;
/** A plain site that keeps every byte it is sent (what the parent passed on), and answers once a chunked body ended. */
let rawSite: Server;
let rawSiteGot = "";
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
  plainServer = startGitHttpServer(join(root, "plain-srv"), TOKEN);
  await plainServer.createRepo("acme/proj");
  rawSite = createServer((c) => {
    c.on("error", () => c.destroy());
    c.on("data", (d: Buffer) => {
      rawSiteGot += d.toString("latin1");
      if (rawSiteGot.endsWith("0\r\n\r\n")) c.end("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n");
    });
  });
  await new Promise<void>((r) => rawSite.listen(0, "127.0.0.1", r));
  parent = await startFakeParent({
    sites: { "forge.test": Number(new URL(server.url).port), "git.corp.test": Number(new URL(plainServer.url).port), "raw.corp.test": (rawSite.address() as { port: number }).port },
    credentials: `corp:${PASSWORD}`,
  });
  relay = new ParentRelay(new ParentRouter(parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN" }).settings, (n) => (n === "PROXY_LOGIN" ? `corp:${PASSWORD}` : null)));
});
afterAll(async () => {
  relay.close();
  await parent.close();
  await server.stop();
  await plainServer.stop();
  rawSite.close();
  rmSync(root, { recursive: true, force: true });
});

function bridge(origin = "https://forge.test/acme/proj.git") {
  const repo = join(root, `host-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(repo);
  const git = (...a: string[]) => Bun.spawnSync(["git", "-C", repo, ...a], { env: { PATH, HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1" } });
  git("init", "-q", "-b", "main");
  git("remote", "add", "origin", origin);
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

/** Sends `text` raw to the relay on `port` and reads until it ends (or 5 s). */
function rawTo(port: number, text: string): Promise<string> {
  const { promise, resolve } = Promise.withResolvers<string>();
  let out = "";
  void Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: { open: (s) => void s.write(text), data: (_s, d) => void (out += d.toString("latin1")), close: () => resolve(out), error: () => resolve(out) },
  });
  setTimeout(() => resolve(out), 5000);
  return promise;
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

  test("a plain http:// remote: git's absolute-form requests reach it through the parent with its real credentials; the relay's password never reaches the parent", async () => {
    parent.seen.length = 0;
    plainServer.requests.length = 0;
    const call = bridge("http://git.corp.test/acme/proj.git");
    const r = await call("git", ["ls-remote", "origin"]);
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
    expect(parent.seen.length).toBeGreaterThan(0);
    expect(parent.seen.every((s) => s.target.startsWith("http://git.corp.test:80/acme/proj.git/") && s.authorization === corp)).toBe(true);
    // The relay's own password was taken off: the parent saw one Proxy-Authorization, its own.
    expect(parent.seen.every((s) => s.head.match(/proxy-authorization/gi)?.length === 1)).toBe(true);
    expect(plainServer.requests.some((q) => q.authorized)).toBe(true);
    expect(relay.active()).toBe(0);
  });

  test("a push to a plain http:// remote through shim, bridge and gate: a pack over 1 MiB (git sends it chunked) reaches the upstream through the parent", async () => {
    const upstreamRepo = join(root, "plain-srv", "acme", "proj.git");
    const host = join(root, "plain-host");
    mkdirSync(host);
    await gitIn(host, "init", "-q", "-b", "main");
    await commitOn(host, "main", { "README.md": "hello\n" }, "init");
    await gitIn(host, "remote", "add", "origin", "http://git.corp.test/acme/proj.git");
    const clone = join(root, "plain-clone");
    await gitIn(root, "clone", "-q", "--shared", host, clone);
    await gitIn(clone, "remote", "set-url", "origin", "http://git.corp.test/acme/proj.git");
    let b: StartedBridge | null = null;
    try {
      b = await startBridge({
        socketPath: join(root, "plain-bridge.sock"),
        sandbox: { id: "plain-1", name: "demo", workspace: clone, repo: host },
        gateDir: join(root, "plain-gate"),
        secrets: () => ({ GIT_TOKEN: TOKEN }),
        audit: () => undefined,
        exec: createExec({ PATH }),
        path: PATH,
        settings: () => NO_BRIDGE_SETTINGS,
        parent: relay,
      });
      // Random bytes do not compress: the pack is over git's 1 MiB post buffer, so its POST is chunked.
      writeFileSync(join(clone, "big.bin"), crypto.getRandomValues(new Uint8Array(1_500_000)));
      await gitIn(clone, "checkout", "-q", "-b", "big");
      await gitIn(clone, "add", "big.bin");
      await gitIn(clone, "commit", "-q", "-m", "big");
      const sha = (await gitIn(clone, "rev-parse", "HEAD")).trim();
      parent.seen.length = 0;
      const env = { SBX_IN_SANDBOX: "1", SBX_BRIDGE_SOCKET: join(root, "plain-bridge.sock"), SBX_BUN: process.execPath, PATH: `${SHIMS}:${PATH}` };
      const r = await sh([join(SHIMS, "git"), "push", "origin", "big:sbx/demo/big"], { cwd: clone, env });
      expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
      expect(await refIn(upstreamRepo, "refs/heads/sbx/demo/big")).toBe(sha);
      expect(parent.seen.some((s) => s.method === "POST" && /transfer-encoding: chunked/i.test(s.head))).toBe(true);
      expect(parent.seen.every((s) => s.target.startsWith("http://git.corp.test:80/") && s.authorization === corp)).toBe(true);
      expect(relay.active()).toBe(0);
    } finally {
      await b?.close();
    }
  }, 60_000);

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

  test("parent-proxy-scope: an http:// call is lent plain requests to its host and port, an https:// one tunnels: never the other way, never another host", async () => {
    const plain = await relay.lease("http://git.corp.test/acme/proj.git");
    const tls = await relay.lease("https://forge.test/acme/proj.git");
    try {
      const pu = new URL(plain.env.HTTP_PROXY!);
      const pa = `Proxy-Authorization: Basic ${Buffer.from(`sbx:${decodeURIComponent(pu.password)}`).toString("base64")}\r\n`;
      const tu = new URL(tls.env.HTTPS_PROXY!);
      const ta = `Proxy-Authorization: Basic ${Buffer.from(`sbx:${decodeURIComponent(tu.password)}`).toString("base64")}\r\n`;
      parent.seen.length = 0;
      const status = async (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(await rawTo(Number(pu.port), text))?.[1] ?? 0);
      expect(await connectVia(plain.env.HTTP_PROXY!, "git.corp.test:80")).toBe(405);
      expect(await status(`GET http://forge.test/acme/proj.git/info/refs HTTP/1.1\r\n${ta}\r\n`)).toBe(405);
      for (const url of ["http://evil.test/", "http://git.corp.test:8080/", "http://127.0.0.1/"]) {
        expect({ url, status: await status(`GET ${url} HTTP/1.1\r\n${pa}\r\n`) }).toEqual({ url, status: 403 });
      }
      expect(parent.seen).toEqual([]);
    } finally {
      plain.release();
      tls.release();
    }
  });

  test("parent-proxy-scope: a chunked body is passed to the parent to its last chunk, and a request pipelined after it never is", async () => {
    const lease = await relay.lease("http://raw.corp.test/x");
    try {
      const u = new URL(lease.env.HTTP_PROXY!);
      const a = `Proxy-Authorization: Basic ${Buffer.from(`sbx:${decodeURIComponent(u.password)}`).toString("base64")}\r\n`;
      rawSiteGot = "";
      const body = "5\r\nhello\r\n0\r\n\r\n";
      const answer = await rawTo(Number(u.port), `POST http://raw.corp.test/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n${a}\r\n${body}GET http://evil.test/ HTTP/1.1\r\n\r\n`);
      expect(answer).toStartWith("HTTP/1.1 200");
      // The fake parent passes on the head as it got it (a real one would take its own login off), then the body.
      expect(rawSiteGot).toContain("Transfer-Encoding: chunked\r\nConnection: close\r\n");
      expect(rawSiteGot).toEndWith(`\r\n\r\n${body}`);
      expect(rawSiteGot).not.toContain("evil");
      expect(rawSiteGot).not.toContain(decodeURIComponent(u.password));
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
      // The slot is free once the relay has seen that one close (on a busy machine, not at once).
      let status = 0;
      for (let i = 0; i < 40 && status === 0; i++) {
        await Bun.sleep(50);
        status = await connectVia(lease.env.HTTPS_PROXY!, "forge.test:22");
      }
      expect(status).toBe(403);
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
