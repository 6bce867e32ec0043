// The user-account driver's pure parts: port choice, the stored identity → spec, the host-user Exec (who the host user is: test/unit/sys/host-user.test.ts).
import { describe, expect, test } from "bun:test";
import type { Sandbox } from "../../../src/core/schemas";
import { pickProxyPort, PROXY_PORT_RANGE, userSpec, type UserIdentity } from "../../../src/drivers/user-account";
import { hostUserExec } from "../../../src/sys/as-user";
import type { Paths } from "../../../src/sys/paths";
import { FakeExec } from "../../fakes/exec";


describe("pickProxyPort", () => {
  test("in range, stable for an id, skips taken and bound ports", () => {
    const a = pickProxyPort("abc123def456", new Set(), () => true);
    expect(a).toBeGreaterThanOrEqual(PROXY_PORT_RANGE.min);
    expect(a).toBeLessThanOrEqual(PROXY_PORT_RANGE.max);
    expect(pickProxyPort("abc123def456", new Set(), () => true)).toBe(a);
    const b = pickProxyPort("abc123def456", new Set([a]), () => true);
    expect(b).not.toBe(a);
    expect(pickProxyPort("abc123def456", new Set(), (p) => p !== a)).not.toBe(a);
  });
  test("none free: a clear error", () => {
    expect(() => pickProxyPort("x", new Set(), () => false)).toThrow(/no free loopback port/);
  });
});

describe("userSpec", () => {
  const paths = { runtimeDir: "/tmp/sbx-0", sandboxRoot: "/root/.cache/sandbox" } as Paths;
  const identity: UserIdentity = {
    kind: "user",
    id: "abc123def456",
    dir: "/root/.cache/sandbox/proj-x/demo",
    proxyPort: 23456,
    hostUser: { name: "alice", uid: 1000, gid: 1000, home: "/home/alice", shell: "/bin/bash" },
  };
  const row = { id: 1, name: "demo", repo: "/home/alice/proj", backend: "linux-user", identity, state: "active" } as unknown as Sandbox;
  test("the stored port, the host user and the socket dir; the proxy and LLM variables point at the port", () => {
    const s = userSpec(paths, row);
    expect(s.options).toEqual({ driver: "user", proxyPort: 23456 });
    expect(s.hostUser.name).toBe("alice");
    expect(s.sockets.dir).toBe("/tmp/sbx-0/sb/abc123def456");
    expect(s.env).toMatchObject({
      SANDBOX: "demo",
      HTTP_PROXY: "http://127.0.0.1:23456",
      https_proxy: "http://127.0.0.1:23456",
      ANTHROPIC_BASE_URL: "http://127.0.0.1:23456/llm/anthropic",
      ANTHROPIC_AUTH_TOKEN: "sbx-placeholder",
      SBX_BRIDGE_SOCKET: "/tmp/sbx-0/sb/abc123def456/bridge.sock",
    });
  });
  test("a damaged record is refused, never guessed", () => {
    expect(() => userSpec(paths, { ...row, identity: { ...identity, proxyPort: 80 } } as Sandbox)).toThrow(/not a user-account sandbox/);
  });
});

describe("Exec wrappers", () => {
  const alice = { name: "alice", uid: 1000, gid: 1000, home: "/home/alice", shell: "/bin/bash" };
  test("hostUserExec: root drops to the host user with setpriv, HOME its own unless the caller set one", async () => {
    const exec = new FakeExec().expect(["setpriv", "--reuid=1000", "--regid=1000", "--init-groups", "--", "git", "status"]).expect((a) => a[0] === "setpriv");
    const e = hostUserExec(exec, alice, 0);
    await e.run(["git", "status"]);
    await e.run(["git", "log"], { env: { HOME: "/nonexistent" }, replaceEnv: true });
    expect(exec.calls[0]!.opts.env).toMatchObject({ HOME: "/home/alice", USER: "alice" });
    expect(exec.calls[1]!.opts.env).toMatchObject({ HOME: "/nonexistent", USER: "alice" });
    expect(exec.calls[1]!.opts.replaceEnv).toBe(true);
    exec.assertDone();
  });
  test("hostUserExec: nothing to drop when sbx is not root, or the host user is root", () => {
    const exec = new FakeExec();
    expect(hostUserExec(exec, alice, 1000)).toBe(exec);
    expect(hostUserExec(exec, { ...alice, uid: 0 }, 0)).toBe(exec);
  });

});
