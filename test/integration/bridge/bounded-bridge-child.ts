// Test fixture: a bridge in its own process that reports its memory: "ready", then "rss <KiB>" (its peak reset), and on
// SIGUSR2 "peak <KiB>" (VmHWM since): what one push cost it.
import { readFileSync, writeFileSync } from "node:fs";
import { NO_BRIDGE_SETTINGS } from "../../../src/core/bridge-settings";
import { startBridge } from "../../../src/bridge/server";
import { createExec } from "../../../src/sys/exec";

const o = JSON.parse(process.argv[2]!) as { socket: string; clone: string; host: string; gateDir: string; token: string; path: string };
await startBridge({
  settings: () => ({ ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"] }),
  socketPath: o.socket,
  sandbox: { id: "sbx-mem", name: "mem", workspace: o.clone, repo: o.host },
  gateDir: o.gateDir,
  secrets: () => ({ GIT_TOKEN: o.token }),
  audit: () => undefined,
  exec: createExec({ PATH: o.path }),
  path: o.path,
});
const status = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0);
Bun.gc(true);
// Linux: 5 resets the peak resident set size (VmHWM) to the current one.
writeFileSync("/proc/self/clear_refs", "5");
process.on("SIGUSR2", () => process.stdout.write(`peak ${status("VmHWM")}\n`));
process.stdout.write(`ready\nrss ${status("VmRSS")}\n`);
