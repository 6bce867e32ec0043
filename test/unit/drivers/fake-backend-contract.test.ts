// The backend contract run against the in-memory fake: the reference every real backend is held to.
import { runBackendContract } from "../../contract/backend";
import { FakeBackend } from "../../fakes/backend";

runBackendContract("fake (in-memory)", async () => {
  const backend = new FakeBackend();
  let n = 0;
  return {
    backend,
    mutations: () => backend.mutations,
    spec: (name) => ({
      id: `fake${String(++n).padStart(8, "0")}`,
      name,
      repo: "/repo",
      dir: `/cache/sandbox/repo-x/${name}`,
      hostUser: { name: "ada", uid: 1000, gid: 1000, home: "/home/ada", shell: "/bin/bash" },
      sockets: { dir: "/run/sbx/sb/x", proxy: "/run/sbx/sb/x/proxy.sock", bridge: "/run/sbx/sb/x/bridge.sock" },
      env: {},
      overlays: [],
      options: { driver: "fake" },
    }),
  };
});
