// The LLM key proxy as a sandbox reaches it, for tests: a real egress proxy (its reader, its forwarder, its pool) with
// the LLM proxy as its origin forwarder, accepting on a 127.0.0.1 port as a sandbox's handed-over listener is. Shaped
// like the node:http server the tests used to mount the handler on (listen, address, close), so they read the same.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import type { Server } from "node:http";
import { join } from "node:path";
import { fdPassing } from "../../shims/fd-pass";
import type { LlmProxy } from "../../src/llm/handler";
import { startEgressProxy, type EgressProxy } from "../../src/proxy/egress-proxy";

export interface LlmServer {
  listen(port: 0, host: "127.0.0.1", cb: () => void): void;
  address(): { port: number; address: string; family: string } | null;
  close(cb?: () => void): void;
  closeAllConnections(): void;
}

/** Typed as node:http's Server for the tests written against one: only listen, address, close and closeAllConnections exist. */
export function llmServer(llm: LlmProxy): Server {
  let proxy: EgressProxy | null = null;
  let port = 0;
  const dir = mkdtempSync(join(tmpdir(), "sbxl-"));
  const server: LlmServer = {
    listen(_port, _host, cb) {
      const lib = fdPassing();
      if (!lib) throw new Error("llmServer needs fd passing (Linux): the LLM proxy is reached through the egress proxy's listener");
      void startEgressProxy({ pace: null, socketPath: join(dir, "proxy.sock"), sandbox: { id: 1, name: "llm-test" }, policy: () => ({ sandbox: [], global: [] }), resolve: async () => [], originHandler: llm.local, originForwarder: llm }).then((p) => {
        proxy = p;
        const l = lib.listenLoopback(0);
        port = l.port;
        p.serveListener(l.fd);
        cb();
      });
    },
    address: () => (proxy ? { port, address: "127.0.0.1", family: "IPv4" } : null),
    close(cb) {
      void (proxy?.close() ?? Promise.resolve()).then(() => {
        rmSync(dir, { recursive: true, force: true });
        cb?.();
      });
    },
    closeAllConnections: () => undefined,
  };
  return server as unknown as Server;
}
