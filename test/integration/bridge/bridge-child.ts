// Test fixture: a bridge in its own process that kills itself (SIGKILL) right after the gate's push started, before its hook opens the FIFO.
import { NO_BRIDGE_SETTINGS } from "../../../src/core/bridge-settings";
import { startBridge } from "../../../src/bridge/server";
import { createExec } from "../../../src/sys/exec";

const o = JSON.parse(process.argv[2]!) as { socket: string; clone: string; host: string; gateDir: string; token: string; path: string };
await startBridge({
  settings: () => ({ ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"] }), // pushes by plain branch names; the prefix has its own test
  socketPath: o.socket,
  sandbox: { id: "sbx-child", name: "child", workspace: o.clone, repo: o.host },
  gateDir: o.gateDir,
  secrets: () => ({ GIT_TOKEN: o.token }),
  audit: () => undefined,
  exec: createExec({ PATH: o.path }),
  path: o.path,
  faults: {
    afterPushStarted: () => {
      process.kill(process.pid, "SIGKILL");
    },
  },
});
process.stdout.write("ready\n");
