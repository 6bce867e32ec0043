// A Linux user-account sandbox is made only where Landlock can keep its guest's abstract sockets and signals apart
// (ABI 6), unless the person says `--allow-weaker`; sbx doctor says which this kernel is.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UserAccountDriver } from "../../../src/drivers/user-account";
import { LinuxUserBackend } from "../../../src/drivers/linux-user/backend";
import { readEnv } from "../../../src/sys/env";
import { pathsFor } from "../../../src/sys/paths";
import { ConfigSchema } from "../../../src/core/config";
import { FakeLinux } from "../../fakes/linux";
import type { NewSandbox } from "../../../src/drivers/driver";

const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-weaker-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function driverWith(abi: number | null) {
  const host = { name: "alice", uid: 1000, gid: 1000, home: "/home/alice", repo: "/home/alice/src/proj" };
  const linux = new FakeLinux(host);
  const env = readEnv({ vars: { HOME: "/root", USER: "root", PATH: process.env.PATH, SUDO_UID: "1000", SUDO_GID: "1000", SUDO_USER: "alice" }, uid: 0, gid: 0, platform: "linux" });
  const paths = pathsFor(readEnv({ vars: { HOME: host.home, USER: "alice", PATH: process.env.PATH, XDG_RUNTIME_DIR: join(root, "rt") }, uid: 1000, gid: 1000, platform: "linux" }));
  const backend = new LinuxUserBackend({ exec: linux.exec, root: "/var/lib/sbx", table: "sbx", cgroupRoot: join(root, "no-cgroups"), warn: () => {} });
  return new UserAccountDriver({ exec: linux.exec, env, paths, backend, hostUser: { name: "alice", uid: 1000, gid: 1000, home: "/home/alice", shell: "/bin/bash" }, portFree: () => true, landlockAbi: () => abi });
}

const n = (extra: Partial<NewSandbox> = {}): NewSandbox => ({ name: "w", repo: "/home/alice/src/proj", dir: join(root, "sb"), id: "abc123def456", cwd: "/home/alice/src/proj", config: ConfigSchema.parse({}), asUid: 1000, ...extra });

describe("--allow-weaker", () => {
  test("ABI 6 or newer: made", async () => {
    expect((await driverWith(6).newIdentity(n(), [])).kind).toBe("user");
  });

  test("an older Landlock, or none: refused (69) with what to do; nothing is made", async () => {
    for (const abi of [5, null]) {
      const e = (await driverWith(abi).newIdentity(n(), []).then(() => null, (x: unknown) => x)) as { exitCode: number; message: string; hint: string } | null;
      if (e === null) throw new Error(`made on Landlock ${abi}`);
      expect(e.exitCode).toBe(69);
      expect(e.message).toContain("cannot keep a guest's abstract unix sockets and signals apart");
      expect(e.hint).toContain("--allow-weaker");
    }
  });

  test("with --allow-weaker: made on such a kernel too", async () => {
    expect((await driverWith(4).newIdentity(n({ allowWeaker: true }), [])).kind).toBe("user");
  });
});

describe("the transparent path in a user-account sandbox's identity", () => {
  test("a Linux guest has it unless --no-transparent or the config says no", async () => {
    expect((await driverWith(6).newIdentity(n(), [])).transparent).toBe(true);
    expect((await driverWith(6).newIdentity(n({ transparent: false }), [])).transparent).toBeUndefined();
    expect((await driverWith(6).newIdentity(n({ config: ConfigSchema.parse({ transparent: false }) }), [])).transparent).toBeUndefined();
  });
});
