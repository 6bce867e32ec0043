// Test-only: the GuardContext a guard's start() gets, for one sandbox row, with a FakeExec and a silent log.
import type { GuardContext } from "../../src/guards/guards";
import { silentLogger } from "../../src/sys/log";
import type { Sandbox } from "../../src/core/schemas";
import type { Store } from "../../src/store/store";
import { FakeExec } from "../fakes/exec";

/** `dir` is the sandbox's socket dir (made by the caller), `specDir` its state dir; options go into the spec. */
export function guardContext(o: { store: Store; sandbox: Sandbox; dir: string; specDir: string; options?: GuardContext["spec"]["options"]; home?: string }): GuardContext {
  const sockets = { dir: o.dir, proxy: `${o.dir}/proxy.sock`, bridge: `${o.dir}/bridge.sock` };
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
    sockets,
    store: o.store,
    exec: new FakeExec(),
    paths: {} as GuardContext["paths"],
    log: silentLogger,
    audit: () => {},
  };
}
