// The daemon's parent proxy at its start (daemon/main.ts `parentOf`): the config file's `proxy` wins whole, else the
// environment's; what cannot be used is logged; the log names the parent as people see it, never its credentials.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parentOf } from "../../../src/daemon/main";
import { readEnv } from "../../../src/sys/env";
import { createLogger } from "../../../src/sys/log";
import { pathsFor } from "../../../src/sys/paths";

let root = "";
afterEach(() => rmSync(root, { recursive: true, force: true }));

function world(vars: Record<string, string>, config?: unknown) {
  root = mkdtempSync(join(tmpdir(), "sbx-parent-of-"));
  const env = readEnv({ vars: { HOME: root, XDG_CONFIG_HOME: join(root, "cfg"), XDG_STATE_HOME: join(root, "st"), ...vars }, uid: 1000, gid: 1000, platform: "linux" });
  const paths = pathsFor(env);
  if (config !== undefined) {
    mkdirSync(join(root, "cfg", "sbx"), { recursive: true });
    writeFileSync(paths.configFile, typeof config === "string" ? config : JSON.stringify(config));
  }
  const lines: string[] = [];
  return { d: { env, paths, log: createLogger((l) => void lines.push(l), "debug") }, lines };
}

describe("parent-proxy at the daemon's start", () => {
  test("the environment's proxy, logged without its credentials", () => {
    const { d, lines } = world({ HTTPS_PROXY: "http://jo:hunter2secret@proxy.corp:3128", NO_PROXY: ".corp" });
    const p = parentOf(d, () => null)!;
    expect(p.router.route("https", "api.example.com")?.endpoint.shown).toBe("http://proxy.corp:3128");
    expect(p.router.route("https", "git.corp")).toBeNull();
    expect(lines.join("")).toContain("http://proxy.corp:3128");
    expect(lines.join("")).not.toContain("hunter2secret");
  });

  test("the config file's proxy wins whole over the environment's; its credentials are the stored secret it names", () => {
    const { d } = world({ HTTPS_PROXY: "http://env-proxy:1" }, { proxy: { url: "http://cfg-proxy:3128", credentials: "PROXY_LOGIN" } });
    const p = parentOf(d, (n) => (n === "PROXY_LOGIN" ? "jo:pw" : null))!;
    const r = p.router.route("https", "api.example.com")!;
    expect(r.endpoint.shown).toBe("http://cfg-proxy:3128");
    expect(r.authorization()).toEqual({ ok: true, value: `Basic ${Buffer.from("jo:pw").toString("base64")}` });
  });

  test("a config file that cannot be read is logged, and the environment's proxy used; a SOCKS proxy is logged as unused", () => {
    const bad = world({ HTTPS_PROXY: "http://env-proxy:1" }, "{ not json");
    expect(parentOf(bad.d, () => null)?.router.route("https", "x.example")?.endpoint.host).toBe("env-proxy");
    expect(bad.lines.join("")).toContain("the config file cannot be read");
    rmSync(root, { recursive: true, force: true });
    const socks = world({ ALL_PROXY: "socks5://127.0.0.1:1080" });
    expect(parentOf(socks.d, () => null)).toBeNull();
    expect(socks.lines.join("")).toContain("socks5:// proxies are not supported");
  });
});
