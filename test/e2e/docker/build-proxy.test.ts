// build-proxy on a real engine (issue 39): an image build behind a company proxy gets it as Docker's predefined proxy
// args. Measured here: a RUN step sees HTTPS_PROXY and NO_PROXY; the image keeps neither (not in `docker history`, not
// in its config), so the value never travels with the image; a Dockerfile that declares `ARG HTTPS_PROXY` does keep it
// in its history, which is why sbx never passes the proxy's credentials into a build (core/parent-proxy.ts).
// parent-proxy-scope: a parent that wants a login (here on the host's loopback too, which a build's containers do not
// reach) is lent to the build through a per-build relay on the engine's bridge gateway (sys/build-relay.ts): a RUN step
// fetches through it, and neither the image's history nor its saved layers hold the parent's login; a declared
// `ARG HTTPS_PROXY` keeps only the build's own relay password, dead once the build ends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:net";
import { parentFromEnv } from "../../../src/core/parent-proxy";
import { leaseBuildProxy, type BuildProxyLease } from "../../../src/sys/build-relay";
import { ParentRouter } from "../../../src/sys/parent";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";
import { DockerEngine } from "../../../src/drivers/docker/engine-client";
import { ensureImage } from "../../../src/drivers/docker/image";
import { createExec } from "../../../src/sys/exec";
import { acquireFixture, BASE_IMAGE, canRun, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

const ok = (argv: string[]) => Bun.spawnSync(argv, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
const why = !ok(["docker", "info"]) ? "no Docker engine answers" : !ok(["docker", "image", "inspect", BASE_IMAGE]) ? `base image ${BASE_IMAGE} missing` : undefined;
const user = { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" };
const PROXY = "http://proxy.corp.test:3128";
const exec = createExec(process.env as Record<string, string>);
const engine = new DockerEngine(exec, undefined);
const sh = (argv: string[]) => Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" }).stdout.toString();

let tmp = "";
const tags: string[] = [];

/** A repo whose Dockerfile is `lines`, built by sbx with the parent proxy's args; its tag. */
async function build(name: string, lines: string[]): Promise<string> {
  const repo = join(tmp, name);
  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, "Dockerfile"), `FROM ${BASE_IMAGE}\n${lines.join("\n")}\n`);
  const router = new ParentRouter(parentFromEnv({ HTTPS_PROXY: PROXY, NO_PROXY: ".corp.test" }).settings);
  const img = await ensureImage(engine, exec, repo, user, { proxy: () => leaseBuildProxy(router, () => engine.bridgeGateway()), rebuild: true });
  tags.push(img.tag);
  return img.tag;
}

describe.skipIf(why !== undefined)(`build-proxy on a real engine${why ? ` (skipped: ${why})` : ""}`, () => {
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), "sbx-build-proxy-"));
  });
  afterAll(() => {
    if (tags.length) Bun.spawnSync(["docker", "image", "rm", "--force", ...tags], { stdout: "ignore", stderr: "ignore" });
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test("a RUN step sees the parent proxy; the image keeps it nowhere (history, config)", async () => {
    const tag = await build("plain", ["RUN printenv HTTPS_PROXY > /proxy-seen && printenv NO_PROXY >> /proxy-seen"]);
    expect(sh(["docker", "run", "--rm", "--entrypoint", "cat", tag, "/proxy-seen"])).toBe(`${PROXY}\n.corp.test\n`);
    expect(sh(["docker", "history", "--no-trunc", "--format", "{{.CreatedBy}}", tag])).not.toContain("proxy.corp.test");
    expect(sh(["docker", "image", "inspect", tag])).not.toContain("proxy.corp.test");
  }, 120_000);

  test("a Dockerfile that declares ARG HTTPS_PROXY keeps its value in the history: why a login never goes in", async () => {
    const tag = await build("declared", ["ARG HTTPS_PROXY", "RUN true"]);
    expect(sh(["docker", "history", "--no-trunc", "--format", "{{.CreatedBy}}", tag])).toContain(`HTTPS_PROXY=${PROXY}`);
  }, 120_000);
});

const LOGIN_USER = "corpuser7";
const LOGIN_PASSWORD = "corp-s3cret-pw9";

/** Sends `text` raw to host:port and reads until the other side ends (or 5 s). */
function raw(host: string, port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port }, () => s.write(text, "latin1"));
    let out = "";
    s.setEncoding("latin1");
    s.on("data", (d: string) => (out += d));
    s.on("close", () => resolve(out));
    s.on("error", reject);
    setTimeout(() => (s.destroy(), resolve(out)), 5000);
  });
}

describe.skipIf(why !== undefined)(`parent-proxy-scope: image builds behind a parent proxy that wants a login${why ? ` (skipped: ${why})` : ""}`, () => {
  let upstream: ReturnType<typeof Bun.serve>;
  let parent: FakeParent;
  let router: ParentRouter;
  const leases: BuildProxyLease[] = [];
  const built: string[] = [];
  let dir = "";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-build-login-"));
    upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => new Response(`corp package ${new URL(req.url).pathname}\n`) });
    // The company proxy: on the host's loopback, wanting Basic credentials, the only way to pkgs.corp.test.
    parent = await startFakeParent({ sites: { "pkgs.corp.test": upstream.port! }, credentials: `${LOGIN_USER}:${LOGIN_PASSWORD}` });
    const url = `http://${LOGIN_USER}:${LOGIN_PASSWORD}@127.0.0.1:${parent.port}`;
    router = new ParentRouter(parentFromEnv({ HTTPS_PROXY: url, HTTP_PROXY: url }).settings);
  });
  afterAll(async () => {
    await parent?.close();
    upstream?.stop(true);
    if (built.length) Bun.spawnSync(["docker", "image", "rm", "--force", ...built], { stdout: "ignore", stderr: "ignore" });
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Builds `lines` with the daemon's lease (the relay it opened recorded), as sbx create does. */
  async function buildThrough(name: string, lines: string[]): Promise<string> {
    const repo = join(dir, name);
    mkdirSync(repo, { recursive: true });
    writeFileSync(join(repo, "Dockerfile"), `FROM ${BASE_IMAGE}\n${lines.join("\n")}\n`);
    const img = await ensureImage(engine, exec, repo, user, {
      rebuild: true,
      proxy: async () => {
        const l = await leaseBuildProxy(router, () => engine.bridgeGateway());
        leases.push(l);
        return l;
      },
    });
    built.push(img.tag);
    return img.tag;
  }

  test("a RUN step fetches through it (plain and CONNECT); history and the saved image hold neither user nor password", async () => {
    const before = parent.seen.length;
    const tag = await buildThrough("login", ["RUN curl -fsS http://pkgs.corp.test/plain > /plain && curl -fsS --proxytunnel http://pkgs.corp.test/tunnel > /tunnel"]);
    expect(sh(["docker", "run", "--rm", "--entrypoint", "cat", tag, "/plain", "/tunnel"])).toBe("corp package /plain\ncorp package /tunnel\n");
    // The parent was asked with its login, by the relay (the step held only the relay's password).
    const seen = parent.seen.slice(before);
    expect(seen.map((s) => s.method)).toEqual(["GET", "CONNECT"]);
    for (const s of seen) expect(s.authorization).toBe(`Basic ${Buffer.from(`${LOGIN_USER}:${LOGIN_PASSWORD}`).toString("base64")}`);
    const b64 = Buffer.from(`${LOGIN_USER}:${LOGIN_PASSWORD}`).toString("base64");
    const history = sh(["docker", "history", "--no-trunc", "--format", "{{.CreatedBy}}", tag]) + sh(["docker", "image", "inspect", tag]);
    for (const secret of [LOGIN_USER, LOGIN_PASSWORD, b64]) expect(history).not.toContain(secret);
    // docker save: every layer and the config, grepped whole.
    const saved = Bun.spawnSync(["sh", "-c", `docker save ${tag} | grep -a -c -e ${LOGIN_USER} -e ${LOGIN_PASSWORD} -e ${b64} || true`], { stdout: "pipe" }).stdout.toString().trim();
    expect(saved).toBe("0");
    // The relay is gone with the build.
    const relay = new URL(leases.at(-1)!.args.HTTP_PROXY!);
    await expect(raw(relay.hostname, Number(relay.port), "CONNECT pkgs.corp.test:80 HTTP/1.1\r\n\r\n")).rejects.toThrow(/ECONNREFUSED|refused/i);
  }, 180_000);

  test("a Dockerfile that declares ARG HTTPS_PROXY keeps only the build's relay password, refused after the build", async () => {
    const tag = await buildThrough("declared-login", ["ARG HTTPS_PROXY", "RUN echo $HTTPS_PROXY > /f"]);
    const kept = sh(["docker", "run", "--rm", "--entrypoint", "cat", tag, "/f"]).trim();
    const relay = new URL(leases.at(-1)!.args.HTTPS_PROXY!);
    expect(kept).toBe(relay.href.replace(/\/$/, ""));
    expect(relay.username).toBe("sbx");
    expect(relay.hostname).toBe((await engine.bridgeGateway())!);
    const history = sh(["docker", "history", "--no-trunc", "--format", "{{.CreatedBy}}", tag]);
    expect(history).toContain(relay.password);
    for (const secret of [LOGIN_USER, LOGIN_PASSWORD]) expect(history + kept).not.toContain(secret);
    // Dead: its relay no longer listens, and the next build's relay refuses it.
    await expect(raw(relay.hostname, Number(relay.port), "CONNECT pkgs.corp.test:80 HTTP/1.1\r\n\r\n")).rejects.toThrow(/ECONNREFUSED|refused/i);
    const next = await leaseBuildProxy(router, () => engine.bridgeGateway());
    try {
      const u = new URL(next.args.HTTPS_PROXY!);
      const old = `Proxy-Authorization: Basic ${Buffer.from(`sbx:${relay.password}`).toString("base64")}\r\n`;
      expect(await raw(u.hostname, Number(u.port), `CONNECT pkgs.corp.test:80 HTTP/1.1\r\n${old}\r\n`)).toStartWith("HTTP/1.1 407");
    } finally {
      await next.release();
    }
  }, 180_000);
});

describe.skipIf(!canRun)(`parent-proxy-scope: a sandbox cannot reach a build's relay${canRun ? "" : ` (skipped: ${skipReason})`}`, () => {
  let f: Fixture;
  let upstream: ReturnType<typeof Bun.serve>;
  let parent: FakeParent;
  let router: ParentRouter;
  beforeAll(async () => {
    f = acquireFixture();
    mustCreate(f, "relayreach");
    upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("corp package\n") });
    parent = await startFakeParent({ sites: { "pkgs.corp.test": upstream.port! }, credentials: `${LOGIN_USER}:${LOGIN_PASSWORD}` });
    const url = `http://${LOGIN_USER}:${LOGIN_PASSWORD}@127.0.0.1:${parent.port}`;
    router = new ParentRouter(parentFromEnv({ HTTPS_PROXY: url, HTTP_PROXY: url }).settings);
  }, 180_000);
  afterAll(async () => {
    f?.sbx(["rm", "--force", "relayreach"]);
    releaseFixture();
    await parent?.close();
    upstream?.stop(true);
  }, 60_000);

  test("while a build's relay is open, even with its password: not directly (no route), not through sbx's proxy (refused)", async () => {
    const lease = await leaseBuildProxy(router, () => engine.bridgeGateway());
    try {
      const relay = lease.args.HTTP_PROXY!;
      const u = new URL(relay);
      // The relay answers from the host (the test's own check that it is open and the password good).
      expect(await raw(u.hostname, Number(u.port), `CONNECT pkgs.corp.test:80 HTTP/1.1\r\nProxy-Authorization: Basic ${Buffer.from(`sbx:${u.password}`).toString("base64")}\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)).toContain("corp package");
      const before = parent.seen.length;
      // `-x` names the relay itself (it wins over the sandbox's proxy variables): curl dials the gateway, with no route.
      const direct = f.sbx(["shell", "relayreach", "--", "curl", "-sS", "-m", "5", "-x", relay, "http://pkgs.corp.test/"]);
      expect({ code: direct.code, out: direct.stdout }).toMatchObject({ code: 7 });
      expect(direct.stdout).not.toContain("corp package");
      const tcp = f.sbx(["shell", "relayreach", "--", "bash", "-c", `exec 3<>/dev/tcp/${u.hostname}/${u.port} 2>/dev/null && echo open || echo closed`]);
      expect(tcp.stdout.trim()).toBe("closed");
      // Through sbx's own proxy (the sandbox's HTTP_PROXY): the gateway is a private address nobody allowed.
      const viaSbx = f.sbx(["shell", "relayreach", "--", "curl", "-sS", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", `http://${u.hostname}:${u.port}/`]);
      expect(viaSbx.stdout.trim()).toBe("403");
      expect(parent.seen.length).toBe(before);
    } finally {
      await lease.release();
    }
  }, 120_000);
});
