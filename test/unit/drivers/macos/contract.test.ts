// The backend contract run against MacosBackend on a fake Mac: apply converges, apply twice mutates nothing, cleanup by naming.
import { runBackendContract } from "../../../contract/backend";
import { FakeMac, macSpec } from "../../../fakes/mac";

runBackendContract("macos (fake executor)", async () => {
  const mac = new FakeMac();
  return {
    backend: mac.backend(),
    spec: (name: string) => macSpec(name),
    mutations: () => mac.mutations(),
    teardown: async () => mac.exec.assertDone(),
  };
});
