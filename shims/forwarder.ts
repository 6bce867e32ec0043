// In-sandbox forwarder: 127.0.0.1:<port> → the sandbox's proxy unix socket. Built-ins only; the sandbox's long-lived process.
//
// Usage: bun forwarder.ts [--port N]   (or SBX_PROXY_PORT); socket from SBX_PROXY_SOCKET (default /run/sbx/proxy.sock).
// Fail closed: when the socket is absent or refuses, the client's connection is dropped; nothing else is tried.
import { connect, createServer, type Socket } from "node:net";

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

const server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client: Socket) => {
  client.setNoDelay(true);
  const up = connect({ path: socketPath, allowHalfOpen: true });
  up.once("connect", () => {
    // pipe() ends the other side when one side ends: half-close carried both ways, with backpressure.
    client.pipe(up);
    up.pipe(client);
    client.resume();
  });
  up.on("error", () => client.destroy());
  client.on("error", () => up.destroy());
  // A side that closes without having ended its stream (reset, error) takes the other one down; a clean end
  // has already been passed on by pipe() and must not cut data still queued for the other side.
  up.once("close", () => {
    if (!client.writableEnded) client.destroy();
  });
  client.once("close", () => {
    if (!up.writableEnded) up.destroy();
  });
});

server.on("error", (e) => {
  process.stderr.write(`sbx forwarder: ${(e as Error).message}\n`);
  process.exit(71);
});

server.listen(port, "127.0.0.1", () => {
  const addr = server.address();
  const bound = typeof addr === "object" && addr !== null ? addr.port : port;
  // One line on stdout so a supervisor (or a test) learns the port when 0 was asked for.
  process.stdout.write(`sbx forwarder listening on 127.0.0.1:${bound} → ${socketPath}\n`);
});

for (const sig of ["SIGTERM", "SIGINT"] as const) process.on(sig, () => process.exit(0));
