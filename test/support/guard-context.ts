// Test-only: the GuardContext a guard's start() gets, for one sandbox row, with a FakeExec and a silent log.
import type { DriverCaps } from "../../src/drivers/driver";
import { DOCKER_CAPS } from "../../src/drivers/docker/driver";
import { LINUX_USER_REACH } from "../../src/drivers/linux-user/backend";
import { MACOS_REACH } from "../../src/drivers/macos/backend";
import { userAccountCaps } from "../../src/drivers/user-account";
import type { GuardContext } from "../../src/guards/guards";
import { silentLogger } from "../../src/sys/log";
import type { BackendKind, Sandbox } from "../../src/core/schemas";
import type { Store } from "../../src/store/store";
import { FakeExec } from "../fakes/exec";
import { FAKE_CAPS } from "../fakes/driver";

/** What each kind's driver reports (the real drivers' own values), for a guard started without a driver. */
export const CAPS_OF: Record<BackendKind, DriverCaps> = {
  docker: DOCKER_CAPS,
  "linux-user": userAccountCaps(LINUX_USER_REACH),
  macos: userAccountCaps(MACOS_REACH),
  fake: FAKE_CAPS,
};

/** `dir` is the sandbox's socket dir (made by the caller), `specDir` its state dir; options go into the spec; caps default to its kind's. */
export function guardContext(o: { store: Store; sandbox: Sandbox; dir: string; specDir: string; options?: GuardContext["spec"]["options"]; home?: string; caps?: DriverCaps }): GuardContext {
  const sockets = { dir: o.dir, proxy: `${o.dir}/proxy.sock`, bridge: `${o.dir}/bridge.sock` };
  const exec = new FakeExec();
  return {
    sandbox: o.sandbox,
    spec: {
      id: "0123456789ab",
      name: o.sandbox.name,
      repo: o.sandbox.repo,
      dir: o.specDir,
      hostUser: { name: "u", uid: 1000, gid: 1000, home: o.home ?? "/home/u", shell: "/bin/sh" },
      sockets,
      env: {},
      overlays: [],
      options: o.options ?? { driver: "fake" },
    },
    driver: {
      caps: o.caps ?? CAPS_OF[o.sandbox.backend],
      hostExec: () => exec,
      // The user-account driver's answer (the test's spec holds the port, as a guest's identity does).
      hostProxyPort: (spec) => (spec.options.driver === "user" ? spec.options.proxyPort : null),
      refSyncTarget: () => null,
      bridgePlace: (spec, e) => ({ workspace: `${spec.dir}/clone`, workspaceView: spec.repo, exec: e }),
    },
    sockets,
    store: o.store,
    exec,
    paths: {} as GuardContext["paths"],
    log: silentLogger,
    audit: () => {},
  };
}
