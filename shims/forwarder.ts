// In-sandbox forwarder: 127.0.0.1:<port> → the sandbox's proxy. Bun built-ins only; the sandbox's long-lived process.
//
// Usage: bun forwarder.ts [--port N] [--dns-stub ADDRESS --transparent-ports P,…]   (or SBX_PROXY_PORT); socket from SBX_PROXY_SOCKET (default /run/sbx/proxy.sock),
// handoff socket from SBX_LISTEN_SOCKET (default: listen.sock beside it). The listener is handed to the daemon's proxy,
// which then accepts on it itself (shims/handoff.ts); where that cannot be done, or while no daemon holds it, the
// forwarder relays each connection to the proxy socket. Fail closed: when the socket is absent or refuses, the client's
// connection is dropped; nothing else is tried.
import { dirname, join } from "node:path";
import { fdPassing } from "./fd-pass";
import { startHandoff } from "./handoff";
import { startTcpRelay } from "./relay";
import { startTransparent } from "./transparent";

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const portText = argValue("--port") ?? process.env.SBX_PROXY_PORT ?? "3128";
const socketPath = process.env.SBX_PROXY_SOCKET ?? "/run/sbx/proxy.sock";
const port = Number(portText);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`sbx forwarder: bad port '${portText}'\n`);
  process.exit(64);
}

const handoffPath = process.env.SBX_LISTEN_SOCKET ?? join(dirname(socketPath), "listen.sock");
const lib = fdPassing();
let bound: number;
if (lib) {
  const listener = lib.listenLoopback(port);
  startHandoff({ lib, listener, handoffPath, socketPath, log: (line) => process.stderr.write(`${line}\n`) });
  bound = listener.port;
} else bound = startTcpRelay({ port, socketPath }).port;

// The transparent path (--dns-stub ADDRESS --transparent-ports 80,443, given at create unless --no-transparent): the DNS
// stub and the 80/443 listeners, handed over like the proxy listener.
const stub = argValue("--dns-stub");
const transparentPorts = (argValue("--transparent-ports") ?? "").split(",").filter((p) => /^[1-9][0-9]{0,4}$/.test(p)).map(Number);
if (lib && stub && /^127\.[0-9.]+$/.test(stub)) {
  startTransparent({ lib, stub, ports: transparentPorts, socketPath, handoffPath, log: (line) => process.stderr.write(`${line}\n`) });
}

// One line on stdout so a supervisor (or a test) learns the port when 0 was asked for.
process.stdout.write(`sbx forwarder listening on 127.0.0.1:${bound} → ${socketPath}\n`);

for (const sig of ["SIGTERM", "SIGINT"] as const) process.on(sig, () => process.exit(0));
