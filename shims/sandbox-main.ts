// The container's long-lived process: the egress forwarder (127.0.0.1:<port>, handed to the proxy) and the exec agent (the daemon's fast way to run a command inside).
//
// Usage: bun sandbox-main.ts [--port N]   (the forwarder's flags). The agent dials SBX_AGENT_SOCKET (default: agent.sock
// beside the proxy socket). A crash of either ends this process and so the container: `--init` reaps and the daemon
// sees the sandbox stopped, which is fail closed.
import { dirname, join } from "node:path";
import "./forwarder";
import { MAIN_RUNTIME_ENV, startExecAgent, warmUp } from "./exec-agent";

const proxySocket = process.env.SBX_PROXY_SOCKET ?? "/run/sbx/proxy.sock";
const baseEnv: Record<string, string> = {};
// This process's own JSC settings (set by the container's launch line) are not its commands'.
for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !(k in MAIN_RUNTIME_ENV)) baseEnv[k] = v;
// A crash still ends this process (fail closed), but says why first: the container's log is where it is looked for.
process.on("uncaughtException", (e) => {
  process.stderr.write(`sbx sandbox-main: uncaught: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(70);
});
process.on("unhandledRejection", (e) => {
  process.stderr.write(`sbx sandbox-main: unhandled rejection: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(70);
});
startExecAgent({
  socketPath: process.env.SBX_AGENT_SOCKET ?? join(dirname(proxySocket), "agent.sock"),
  baseEnv,
  log: (line) => process.stderr.write(`${line}\n`),
});
// Bun makes its helper threads when work first needs them; inside a sandbox that hit its process limit (a fork
// bomb) a thread cannot be made, and this process must not need one then. So they are made now, off the start path.
setTimeout(() => void warmUp(), 200);
