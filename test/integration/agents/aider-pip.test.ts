// aider's install inside a sandbox, with the real pip of this host's Python and sbx's real egress proxy (on a unix
// socket, behind the forwarder's stand-in on 127.0.0.1, with nothing allowed): pip's own output for a refused index,
// read by the launcher, becomes sbx's message naming the host and the preset. Nothing leaves the machine: the proxy
// refuses before it looks any name up.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Server } from "node:net";
import { renderLauncher } from "../../../src/core/agents";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { forwarderTo, tempDir } from "../proxy/helpers";

/** This host's python3, when it has venv with ensurepip (pip comes from its bundled wheel: no download). */
function realPython(): string | null {
  const r = Bun.spawnSync(["python3", "-c", "import sys, venv, ensurepip; print(sys.executable)"], { stdout: "pipe", stderr: "ignore" });
  return r.exitCode === 0 ? r.stdout.toString().trim() : null;
}
const python = realPython();

let tmp: ReturnType<typeof tempDir>;
let proxy: EgressProxy;
let fwd: { server: Server; port: number };
const asked: string[] = [];

describe.skipIf(python === null)(`aider's install through sbx's proxy with the real pip${python === null ? " (skipped: no python3 with venv and ensurepip here)" : ""}`, () => {
  beforeAll(async () => {
    tmp = tempDir("sbx-aider-");
    proxy = await startEgressProxy({
      socketPath: join(tmp.dir, "sb", "proxy.sock"),
      sandbox: { id: 7, name: "demo" },
      policy: () => ({ sandbox: [], global: [], published: [] }),
      resolve: async (h) => {
        asked.push(h);
        return [];
      },
      onDecision: () => {},
    });
    fwd = await forwarderTo(proxy.socketPath);
  });
  afterAll(async () => {
    fwd?.server.close();
    await proxy?.close();
    tmp?.cleanup();
  });

  test("PyPI refused: sbx's message names pypi.org and the preset; pip's retries stay in the log; no venv is left", async () => {
    const home = join(tmp.dir, "home");
    const bin = join(tmp.dir, "launchers");
    mkdirSync(home, { recursive: true });
    mkdirSync(bin, { recursive: true });
    Bun.write(join(bin, "aider"), renderLauncher({ agent: "aider", cached: null, node: null, binDir: bin, containerMarker: join(tmp.dir, "dockerenv") }));
    Bun.spawnSync(["touch", join(tmp.dir, "dockerenv")]);
    chmodSync(join(bin, "aider"), 0o555);
    const proxyUrl = `http://127.0.0.1:${fwd.port}`;
    // Spawned, not run synchronously: the proxy answers from this process.
    const p = Bun.spawn([join(bin, "aider"), "--version"], {
      env: {
        PATH: `${bin}:${dirname(python!)}:/usr/bin:/bin`,
        HOME: home,
        SANDBOX: "demo",
        HTTPS_PROXY: proxyUrl,
        HTTP_PROXY: proxyUrl,
        https_proxy: proxyUrl,
        http_proxy: proxyUrl,
        // The person's own pip settings are not this test's; one retry keeps it short (the launcher reads the same text).
        PIP_CONFIG_FILE: "/dev/null",
        PIP_RETRIES: "1",
      },
      stdout: "pipe",
      stderr: "pipe",
      timeout: 120_000,
    });
    const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    expect(code).toBe(1);
    expect(err).toContain("sbx: pip could not reach the package index: sbx's proxy refused pypi.org. On the host: `sbx allow --preset pypi --sandbox demo` (or start it with `sbx run aider demo`, which allows it), then run aider again.");
    expect(err).not.toContain("Retrying");
    const log = readFileSync(join(home, ".local/share/sbx/aider-pip.log"), "utf8");
    // The real pip's words for it, with the proxy's reason phrase in them.
    expect(log).toContain("Tunnel connection failed: 403 sbx: pypi.org:443 is not allowed (sbx allow pypi.org --sandbox demo)");
    expect(existsSync(join(home, ".local/share/sbx/aider"))).toBe(false);
    expect(asked).toEqual([]);
  }, 150_000);
});
