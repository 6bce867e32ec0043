// parent-proxy-scope for image builds (issue 39), on real sockets: the per-build relay that lends a build's steps a
// parent proxy that wants a login. It listens on the engine's bridge gateway (this machine's docker0 address), takes
// only its own build's password, speaks to the parent with the real credentials (which the step never sees), carries
// nothing to the host's loopback or the parent itself, and is gone (not listening, password dead) when released.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { parentFromEnv } from "../../../src/core/parent-proxy";
import { DockerEngine } from "../../../src/drivers/docker/engine-client";
import { leaseBuildProxy, openBuildRelay, type BuildRelay } from "../../../src/sys/build-relay";
import { createExec } from "../../../src/sys/exec";
import { ParentRouter } from "../../../src/sys/parent";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";

const LOGIN = "corpuser:corp-s3cret-pw";
const engine = new DockerEngine(createExec(process.env as Record<string, string>), undefined);
const gateway = Bun.spawnSync(["docker", "info"], { stdout: "ignore", stderr: "ignore" }).exitCode === 0 ? await engine.bridgeGateway() : null;

/** Sends `text` raw to host:port and reads until the other side ends (or 5 s). */
function raw(host: string, port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port }, () => s.write(text, "latin1"));
    let out = "";
    s.setEncoding("latin1");
    s.on("data", (d: string) => (out += d));
    s.on("end", () => resolve(out));
    s.on("close", () => resolve(out));
    s.on("error", reject);
    setTimeout(() => (s.destroy(), resolve(out)), 5000);
  });
}

const basic = (userinfo: string) => `Basic ${Buffer.from(userinfo).toString("base64")}`;
const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);

describe.skipIf(gateway === null)(`parent-proxy-scope: image builds' per-build relay${gateway === null ? " (skipped: no Docker engine bridge gateway here)" : ""}`, () => {
  let upstream: ReturnType<typeof Bun.serve>;
  let parent: FakeParent;
  let router: ParentRouter;
  let relay: BuildRelay;
  let pw = "";

  beforeAll(async () => {
    upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => new Response(`hello ${new URL(req.url).pathname}\n`) });
    parent = await startFakeParent({ sites: { "pkgs.corp.test": upstream.port! }, credentials: LOGIN });
    const url = `http://${LOGIN}@127.0.0.1:${parent.port}`;
    router = new ParentRouter(parentFromEnv({ HTTPS_PROXY: url, HTTP_PROXY: url, NO_PROXY: ".direct.test" }).settings);
    relay = await openBuildRelay(router, gateway!);
    pw = new URL(relay.url).password;
  });
  afterAll(async () => {
    await relay?.close();
    await parent?.close();
    upstream?.stop(true);
  });

  test("it listens on the bridge gateway alone (never loopback, never 0.0.0.0), and its URL is sbx:<password>@gateway", async () => {
    expect(relay.address).toBe(gateway!);
    expect(relay.url).toBe(`http://sbx:${pw}@${gateway}:${relay.port}`);
    expect(pw.length).toBeGreaterThanOrEqual(24);
    await expect(raw("127.0.0.1", relay.port, "CONNECT pkgs.corp.test:80 HTTP/1.1\r\n\r\n")).rejects.toThrow();
    await expect(openBuildRelay(router, "0.0.0.0")).rejects.toThrow(/not a bridge gateway/);
    await expect(openBuildRelay(router, "127.0.0.1")).rejects.toThrow(/not a bridge gateway/);
  });

  test("no password, a wrong one, the parent's own login: 407, and the parent is never asked", async () => {
    const before = parent.seen.length;
    for (const auth of [null, basic(`sbx:${pw}x`), basic(`sbx:${pw.slice(0, -1)}`), basic(LOGIN), basic(`ann:${pw}`)]) {
      const h = auth === null ? "" : `Proxy-Authorization: ${auth}\r\n`;
      expect(statusOf(await raw(gateway!, relay.port, `CONNECT pkgs.corp.test:80 HTTP/1.1\r\n${h}\r\n`))).toBe(407);
      expect(statusOf(await raw(gateway!, relay.port, `GET http://pkgs.corp.test/x HTTP/1.1\r\nHost: pkgs.corp.test\r\n${h}\r\n`))).toBe(407);
    }
    expect(parent.seen.length).toBe(before);
  });

  test("with the build's password: CONNECT and a plain request reach the site; the parent sees its login, never the relay's", async () => {
    const before = parent.seen.length;
    const tunnel = await raw(gateway!, relay.port, `CONNECT pkgs.corp.test:80 HTTP/1.1\r\nProxy-Authorization: ${basic(`sbx:${pw}`)}\r\n\r\nGET /t HTTP/1.1\r\nHost: pkgs.corp.test\r\nConnection: close\r\n\r\n`);
    expect(tunnel).toStartWith("HTTP/1.1 200");
    expect(tunnel).toContain("hello /t");
    const plain = await raw(gateway!, relay.port, `GET http://pkgs.corp.test/p HTTP/1.1\r\nHost: pkgs.corp.test\r\nProxy-Authorization: ${basic(`sbx:${pw}`)}\r\nProxy-Connection: keep-alive\r\n\r\n`);
    expect(plain).toContain("hello /p");
    const seen = parent.seen.slice(before);
    expect(seen.map((s) => [s.method, s.target])).toEqual([["CONNECT", "pkgs.corp.test:80"], ["GET", "http://pkgs.corp.test:80/p"]]);
    for (const s of seen) {
      expect(s.authorization).toBe(basic(LOGIN));
      expect(s.head).not.toContain(pw);
      expect(s.head).not.toContain(Buffer.from(`sbx:${pw}`).toString("base64"));
      expect(s.head.toLowerCase()).not.toContain("proxy-connection");
    }
  });

  test("a pipelined second request is never passed to the parent unread (one request per connection)", async () => {
    const before = parent.seen.length;
    const a = `Proxy-Authorization: ${basic(`sbx:${pw}`)}\r\n`;
    await raw(gateway!, relay.port, `GET http://pkgs.corp.test/one HTTP/1.1\r\nHost: pkgs.corp.test\r\n${a}\r\nGET http://127.0.0.1:22/two HTTP/1.1\r\nHost: x\r\n\r\n`);
    const seen = parent.seen.slice(before);
    expect(seen.length).toBe(1);
    expect(seen[0]!.head).toContain("Connection: close");
    expect(seen[0]!.head).not.toContain("/two");
  });

  test("the host's loopback, the parent itself and NO_PROXY names are refused (403) before the parent is asked", async () => {
    const before = parent.seen.length;
    const a = `Proxy-Authorization: ${basic(`sbx:${pw}`)}\r\n`;
    for (const target of ["127.0.0.1:22", "127.9.9.9:80", "[::1]:22", "[::ffff:127.0.0.1]:22", "localhost:22", "a.localhost:80", "0.0.0.0:22", "0:22", `127.0.0.1:${parent.port}`, `${gateway}:${relay.port}`, `${gateway}:22`, "x.direct.test:443"]) {
      expect({ target, status: statusOf(await raw(gateway!, relay.port, `CONNECT ${target} HTTP/1.1\r\n${a}\r\n`)) }).toEqual({ target, status: 403 });
    }
    for (const url of ["http://127.0.0.1:22/", "http://localhost/", "http://2130706433/", "http://0x7f.1/", "http://x.direct.test/"]) {
      expect({ url, status: statusOf(await raw(gateway!, relay.port, `GET ${url} HTTP/1.1\r\nHost: x\r\n${a}\r\n`)) }).toEqual({ url, status: 403 });
    }
    expect(statusOf(await raw(gateway!, relay.port, `GET http://user:pw@pkgs.corp.test/ HTTP/1.1\r\n${a}\r\n`))).toBe(400);
    expect(statusOf(await raw(gateway!, relay.port, `POST http://pkgs.corp.test/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n${a}\r\n`))).toBe(400);
    expect(parent.seen.length).toBe(before);
  });

  test("bounded: at most 128 connections at once; the next is cut, and a slot freed is taken again", async () => {
    const own = await openBuildRelay(router, gateway!);
    const open = await Promise.all(Array.from({ length: 128 }, () => new Promise<import("node:net").Socket>((resolve, reject) => {
      const c = connect({ host: gateway!, port: own.port }, () => resolve(c));
      c.on("error", reject);
    })));
    await Bun.sleep(50);
    expect(await raw(gateway!, own.port, "CONNECT pkgs.corp.test:80 HTTP/1.1\r\n\r\n")).toBe("");
    open[0]!.destroy();
    await Bun.sleep(50);
    expect(statusOf(await raw(gateway!, own.port, "CONNECT pkgs.corp.test:80 HTTP/1.1\r\n\r\n"))).toBe(407);
    for (const c of open) c.destroy();
    await own.close();
  });

  test("released: not listening, and its password is refused by the next build's relay", async () => {
    const lease1 = await leaseBuildProxy(router, async () => gateway);
    const u1 = new URL(lease1.args.HTTPS_PROXY!);
    expect(lease1.args.HTTP_PROXY).toBe(lease1.args.HTTPS_PROXY!);
    expect(lease1.args.NO_PROXY).toBe(".direct.test");
    expect(JSON.stringify(lease1)).not.toContain("corp-s3cret-pw");
    const ok = await raw(gateway!, Number(u1.port), `CONNECT pkgs.corp.test:80 HTTP/1.1\r\nProxy-Authorization: ${basic(`sbx:${u1.password}`)}\r\n\r\nGET /r HTTP/1.1\r\nHost: pkgs.corp.test\r\nConnection: close\r\n\r\n`);
    expect(ok).toStartWith("HTTP/1.1 200");
    expect(ok).toContain("hello /r");
    await lease1.release();
    await expect(raw(gateway!, Number(u1.port), "CONNECT pkgs.corp.test:80 HTTP/1.1\r\n\r\n")).rejects.toThrow(/ECONNREFUSED|refused/i);
    const lease2 = await leaseBuildProxy(router, async () => gateway);
    const u2 = new URL(lease2.args.HTTPS_PROXY!);
    expect(u2.password).not.toBe(u1.password);
    expect(statusOf(await raw(gateway!, Number(u2.port), `CONNECT pkgs.corp.test:80 HTTP/1.1\r\nProxy-Authorization: ${basic(`sbx:${u1.password}`)}\r\n\r\n`))).toBe(407);
    await lease2.release();
  });

  test("no gateway, or one not on this machine: no relay, the parent left out with a note that says why", async () => {
    const none = await leaseBuildProxy(router, async () => null);
    expect(none.args).toEqual({});
    expect(none.notes.join("\n")).toContain("names no gateway");
    const elsewhere = await leaseBuildProxy(router, async () => "192.0.2.1");
    expect(elsewhere.args).toEqual({});
    expect(elsewhere.notes.join("\n")).toContain("cannot listen on the engine's bridge gateway 192.0.2.1");
    expect(JSON.stringify([none, elsewhere])).not.toContain("corp-s3cret-pw");
  });
});
