// sbx doctor's parent proxy line against a company proxy on loopback (test/support/fake-parent.ts): shown as people
// see it (never its credentials), where it was read, and tried with one CONNECT; each failure says what to do.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parentFromConfig, parentFromEnv } from "../../../src/core/parent-proxy";
import { checkBuildRelay, checkParentProxy } from "../../../src/doctor/parent-proxy";
import { DockerEngine } from "../../../src/drivers/docker/engine-client";
import { createExec } from "../../../src/sys/exec";
import { runDoctor } from "../../../src/doctor/doctor";
import { readEnv } from "../../../src/sys/env";
import { pathsFor } from "../../../src/sys/paths";
import { FakeExec } from "../../fakes/exec";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";

const PASSWORD = "doctor-Pa55word";
const probe = { host: "llm.test", port: 443 };
let parent: FakeParent;
let site: ReturnType<typeof createServer>;
let root: string;
beforeAll(async () => {
  site = createServer((s) => s.on("error", () => s.destroy()));
  await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
  parent = await startFakeParent({ sites: { "llm.test": (site.address() as { port: number }).port }, credentials: `corp:${PASSWORD}` });
  root = mkdtempSync(join(tmpdir(), "sbx-doc-"));
});
afterAll(async () => {
  await parent.close();
  site.close();
  rmSync(root, { recursive: true, force: true });
});

describe("parent-proxy doctor: shows the host's proxy and tries it", () => {
  test("none set: ok, and says what would name one", async () => {
    expect(await checkParentProxy({ ...parentFromEnv({}), secrets: {}, probe })).toMatchObject({ status: "ok", detail: expect.stringContaining("none") });
  });

  test("the config's proxy with its stored credentials: one CONNECT goes through; the line names it and never the secret", async () => {
    parent.seen.length = 0;
    const c = await checkParentProxy({ ...parentFromConfig({ url: parent.url, credentials: "PROXY_LOGIN", noProxy: [".corp"] }), secrets: { PROXY_LOGIN: `corp:${PASSWORD}` }, probe });
    expect(c).toEqual({ name: "parent proxy", status: "ok", detail: `${parent.url}, from the config file; NO_PROXY .corp: CONNECT llm.test:443 went through` });
    expect(parent.seen.map((s) => s.target)).toEqual(["llm.test:443"]);
  });

  test("refused for its credentials: a failure naming 407, with how to give sbx the credentials; never the value", async () => {
    const c = await checkParentProxy({ ...parentFromEnv({ HTTPS_PROXY: parent.url.replace("http://", `http://corp:wrong-${PASSWORD}@`) }), secrets: {}, probe });
    expect(c.status).toBe("fail");
    expect(c.detail).toContain(`${parent.url}, from the environment: CONNECT llm.test:443 failed: the parent proxy ${parent.url} answered 407`);
    expect(c.fix).toContain("sbx secret set PROXY_LOGIN");
    expect(JSON.stringify(c)).not.toContain(PASSWORD);
  });

  test("inline credentials that work still warn: a service's daemon would not get them", async () => {
    const c = await checkParentProxy({ ...parentFromEnv({ https_proxy: parent.url.replace("http://", `http://corp:${PASSWORD}@`), NO_PROXY: "*.corp" }), secrets: {}, probe });
    expect(c.status).toBe("warn");
    expect(c.detail).toContain("went through");
    expect(c.detail).toContain("'*.corp' is read literally");
    expect(c.detail).toContain("a daemon run as a service never gets");
    expect(JSON.stringify(c)).not.toContain(PASSWORD);
  });

  test("nothing listening there: a failure that says to check the address; SOCKS is said to be unused", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const c = await checkParentProxy({ ...parentFromEnv({ HTTPS_PROXY: `http://127.0.0.1:${port}` }), secrets: {}, probe });
    expect(c).toMatchObject({ status: "fail", fix: expect.stringContaining("address and port") });
    expect(await checkParentProxy({ ...parentFromEnv({ ALL_PROXY: "socks5://127.0.0.1:1080" }), secrets: {}, probe })).toMatchObject({ status: "warn", detail: expect.stringContaining("socks5:// proxies are not supported") });
  });

  test("sbx doctor reads the config file's proxy, and its secret from the stored values it is given", async () => {
    const env = readEnv({ vars: { HOME: root, XDG_CONFIG_HOME: join(root, "cfg"), XDG_STATE_HOME: join(root, "st"), XDG_RUNTIME_DIR: join(root, "run"), HTTPS_PROXY: "http://127.0.0.1:1" }, uid: 1000, gid: 1000, platform: "linux" });
    const paths = pathsFor(env);
    mkdirSync(join(root, "cfg", "sbx"), { recursive: true });
    writeFileSync(paths.configFile, JSON.stringify({ proxy: { url: parent.url, credentials: "PROXY_LOGIN" } }));
    const exec = new FakeExec().always(["docker", "info", "--format", "{{json .}}"], { exitCode: 1, stderr: "no engine" }).always(["git", "--version"], { stdout: "git version 2.39.5\n" });
    const checks = await runDoctor({ exec, env, paths, bunVersion: "1.4.5", secrets: { PROXY_LOGIN: `corp:${PASSWORD}` }, parentProbe: probe });
    expect(checks.find((c) => c.name === "parent proxy")).toMatchObject({ status: "ok", detail: expect.stringContaining(`${parent.url}, from the config file`) });
    // That parent is on loopback: builds reach it only through a relay, and this engine names no bridge gateway.
    const build = checks.find((c) => c.name === "image builds");
    expect(build?.status).toBe("warn");
    expect(build?.detail).toContain("names no gateway");
  });
});

const engineGateway = Bun.spawnSync(["docker", "info"], { stdout: "ignore", stderr: "ignore" }).exitCode === 0 ? await new DockerEngine(createExec(process.env as Record<string, string>), undefined).bridgeGateway() : null;

describe("parent-proxy doctor: whether image builds can be lent the parent through a per-build relay", () => {
  // Nothing is sent to the parent here: only the relay's listener is tried.
  const withLogin = () => parentFromConfig({ url: "http://proxy.corp.test:3128", credentials: "PROXY_LOGIN" });
  const secrets = { PROXY_LOGIN: `corp:${PASSWORD}` };

  test("a parent builds reach as it is (no login, not on loopback): no line, and the engine is not asked", async () => {
    let asked = 0;
    const gateway = async () => (asked++, null);
    expect(await checkBuildRelay({ ...parentFromEnv({ HTTPS_PROXY: "http://proxy.corp.test:3128" }), secrets: {}, gateway })).toBeNull();
    expect(await checkBuildRelay({ ...parentFromEnv({}), secrets: {}, gateway })).toBeNull();
    expect(asked).toBe(0);
  });

  test("the engine names no bridge gateway, or one not on this machine: a warning that says builds get the parent's 407, and what to do", async () => {
    const none = await checkBuildRelay({ ...parentFromEnv({ HTTPS_PROXY: parent.url }), secrets, gateway: async () => null });
    expect([none?.name, none?.status]).toEqual(["image builds", "warn"]);
    expect(none?.detail).toContain("names no gateway");
    expect(none?.detail).toContain("is on this machine's loopback");
    expect(none?.fix).toContain("docker network inspect bridge");
    // TEST-NET-1: never this machine's, so nothing can listen there (nothing is sent to it).
    const elsewhere = await checkBuildRelay({ ...withLogin(), secrets, gateway: async () => "192.0.2.1" });
    expect(elsewhere?.status).toBe("warn");
    expect(elsewhere?.detail).toContain("cannot listen on the engine's bridge gateway 192.0.2.1");
    expect(elsewhere?.detail).toContain("407");
    expect(JSON.stringify([none, elsewhere])).not.toContain(PASSWORD);
  });

  test.skipIf(engineGateway === null)(`a relay opens on the real engine's bridge gateway, and is closed again${engineGateway === null ? " (skipped: no Docker engine bridge gateway here)" : ""}`, async () => {
    const c = await checkBuildRelay({ ...withLogin(), secrets, gateway: async () => engineGateway });
    expect(c).toEqual({ name: "image builds", status: "ok", detail: `build steps reach the parent proxy through a per-build relay on ${engineGateway} (one password per build; never the proxy's login)` });
    // Closed: nothing of sbx's listens on the gateway after the check.
    const listening = Bun.spawnSync(["ss", "-Htln", `src ${engineGateway}`], { stdout: "pipe" }).stdout.toString();
    expect(listening.trim()).toBe("");
  });
});
