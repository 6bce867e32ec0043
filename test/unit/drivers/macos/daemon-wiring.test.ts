// The daemon's wiring of the macOS backend on a fake Mac: the stored proxy port becomes the spec, bring-up grants the bridge socket ACL, start-up re-applies pf first.
import { describe, expect, test } from "bun:test";
import { productionComponents } from "../../../../src/daemon/main";
import { silentLogger } from "../../../../src/sys/log";
import { userSpec } from "../../../../src/drivers/user-account";
import { Store } from "../../../../src/store/store";
import { SandboxService } from "../../../../src/sandboxes/service";
import { processEnv, type Env } from "../../../../src/sys/env";
import { createEventBus } from "../../../../src/events/feed";
import { ALICE_IDENTITY, ALICE_PATHS, FakeMac } from "../../../fakes/mac";
import { golden } from "./golden";

const paths = ALICE_PATHS;

const IDENTITY = ALICE_IDENTITY;

async function setup() {
  const mac = new FakeMac();
  const backend = mac.backend();
  const store = new Store(":memory:");
  const base = processEnv();
  const env: Env = { ...base, platform: "darwin", uid: 501, gid: 20, userName: "alice", vars: { ...base.vars, HOME: "/Users/alice" } };
  const comps = await productionComponents({ env, paths, exec: mac.exec, log: silentLogger, store, events: createEventBus(() => {}) }, { macos: backend });
  const row = store.createSandbox({ name: "demo", repo: "/Users/alice/src/demo", backend: "macos", identity: IDENTITY });
  const driver = comps.drivers.macos!;
  const spec = driver.spec(row);
  // Bring-up as the service does it once the guards are up (its driver's ensureRunning), and the daemon's first step.
  const bringUp = () => driver.ensureRunning(row, { log() {}, progress() {}, audit() {} });
  const service = new SandboxService({ exec: mac.exec, env, paths, store, drivers: { macos: () => driver }, defaultKind: "macos", log: () => {} });
  // What the controller's guards leave before bring-up: the socket dir (0700) with the bridge's socket in it.
  mac.mk(spec.sockets.dir, "dir", 0o700, "alice");
  mac.mk(spec.sockets.bridge, "sock", 0o600, "alice");
  return { mac, backend, store, comps, row, spec, bringUp, service };
}

describe("macOS backend through the daemon's wiring (fake Mac)", () => {
  test("registry: macos backend, the loopback guard after the proxy, a spec from the stored identity", async () => {
    const { comps, spec, store } = await setup();
    expect(Object.keys(comps.drivers)).toEqual(["macos"]);
    expect(comps.guards.map((g) => g.name)).toEqual(["proxy", "loopback", "bridge", "ref-sync"]);
    expect(spec).toEqual(userSpec(paths, store.listSandboxes()[0]!));
    expect(spec.options).toEqual({ driver: "user", proxyPort: 17001 });
    expect(spec.sockets.bridge).toBe("/tmp/sbx-501/sb/0a1b2c3d4e5f/bridge.sock");
    expect(spec.env.HTTP_PROXY).toBe("http://127.0.0.1:17001");
    expect(spec.env.ANTHROPIC_BASE_URL).toBe("http://127.0.0.1:17001/llm/anthropic");
    expect(spec.env.SBX_BRIDGE_SOCKET).toBe(spec.sockets.bridge);
  });

  test("bring-up: the pf anchor allows exactly the stored port, the bridge socket gets its guest's ACL, the rc files name the port", async () => {
    const { mac, backend, spec, bringUp } = await setup();
    await bringUp();
    golden("daemon-bringup.txt", mac.transcript());
    const t = mac.transcript();
    expect(t).toContain(`chmod +a "user:sbx_alice_0a1b2c3d4e5f allow read,write" /tmp/sbx-501/sb/0a1b2c3d4e5f/bridge.sock`);
    const [uid, rules] = [...mac.pf.anchors][0]!;
    expect(uid).toBeGreaterThanOrEqual(7000);
    expect(rules).toContain("port 17001");
    expect(mac.files.get("/Users/sbx_alice_0a1b2c3d4e5f/.zshenv")?.content).toContain("HTTP_PROXY='http://127.0.0.1:17001'");
    // the ~/bin wrapper names its own dir, so the git shim never mistakes it for the real git
    expect(mac.files.get("/Users/sbx_alice_0a1b2c3d4e5f/bin/git")?.content).toContain("SBX_SHIM_DIR='/Users/sbx_alice_0a1b2c3d4e5f/bin' exec ");
    expect(backend.bridgeSocketAclArgv(spec)).toEqual(["/bin/chmod", "+a", "user:sbx_alice_0a1b2c3d4e5f allow read,write", spec.sockets.bridge]);
  });

  test("daemon start after a reboot: the service's fence re-applies the pf anchor (new token) before anything else runs", async () => {
    const { mac, bringUp, service } = await setup();
    await bringUp();
    mac.reboot();
    expect(mac.pf.anchors.size).toBe(0);
    const from = mac.exec.calls.length;
    await service.fence();
    golden("daemon-restart-prepare.txt", mac.transcript(from));
    expect(mac.pf.enabled).toBe(true);
    expect([...mac.pf.anchors.values()][0]).toContain("port 17001");
    // the fence only restores the firewall: no user, home or clone work before the guards are up
    expect(mac.transcript(from)).not.toMatch(/dscl \. -create|git clone|chmod \+a/);
  });
});

describe("sbx run AGENT on macOS (fake Mac)", () => {
  test("the agent cache is in the host user's share dir (guests have search there), read with the kit's Bun and agent-setup", async () => {
    const { backend } = await setup();
    expect(backend.agentPlace()).toEqual({
      os: "darwin",
      cacheDir: "/private/var/sbx/alice/agents",
      inside: "/private/var/sbx/alice/agents",
      bun: "/usr/local/libexec/sbx/bun",
      shims: "/usr/local/libexec/sbx/shims",
    });
  });

  test("bring-up: the guest's zsh puts the agent launchers last on PATH, after the shims and the system's own", async () => {
    const { mac, bringUp } = await setup();
    await bringUp();
    for (const f of [".zshenv", ".zprofile"]) {
      expect(mac.files.get(`/Users/sbx_alice_0a1b2c3d4e5f/${f}`)?.content).toContain("path=('/Users/sbx_alice_0a1b2c3d4e5f/bin' $path '/private/var/sbx/alice/agents/bin')");
    }
  });
});
