// The loopback proxy port as a guard: for kinds whose proxy port is on the host's loopback (DriverCaps.proxyPort
// "loopback": user accounts), 127.0.0.1:<proxyPort> on the host, served by that sandbox's proxy.
//
// A user-account guest has no container and no forwarder of its own: the firewall (nft per UID on Linux, a pf anchor
// on macOS) lets it reach exactly 127.0.0.1:<its port> and nothing else, so the port is the guest's identity. A kind
// with its forwarder inside gets a no-op handle. Registered after the proxy guard (it relays to it).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fdPassing } from "../../shims/fd-pass";
import { startHandoff } from "../../shims/handoff";
import { SbxError } from "../core/errors";
import { startTcpRelay } from "../proxy/tcp-relay";
import { claimSandboxPort, type PortClaimOptions } from "./port-claim";
import type { GuardContext, GuardHandle, SandboxGuard } from "./guards";
import { LISTEN_SOCKET } from "./proxy";

/** The sandbox's loopback proxy port, as its driver reads it from its spec; throws when it has none (fail closed). */
export function loopbackPort(ctx: Pick<GuardContext, "spec" | "sandbox" | "driver">): number {
  const p = ctx.driver.hostProxyPort(ctx.spec);
  if (typeof p !== "number" || !Number.isInteger(p) || p < 1024 || p > 65535) {
    throw new SbxError("config", `sandbox '${ctx.sandbox.name}' has no usable loopback proxy port (got ${JSON.stringify(p)})`, {
      hint: `Its stored record is damaged: remove it with \`sbx rm --force ${ctx.sandbox.name}\` and create it again.`,
    });
  }
  return p;
}

export function loopbackGuard(opts: PortClaimOptions = {}): SandboxGuard {
  return {
    name: "loopback",
    async start(ctx): Promise<GuardHandle> {
      if (ctx.driver.caps.proxyPort !== "loopback") {
        return { health: () => ({ ok: true, detail: "not used (forwarder inside the sandbox)" }), stop: async () => {} };
      }
      const port = loopbackPort(ctx);
      const lib = fdPassing();
      let up: { port: number; detail(): string; stop(): void };
      try {
        // Another sandbox's guest may have bound it while this one was stopped (guests share the host's loopback).
        up = await claimSandboxPort(ctx, opts, {
          proto: "tcp",
          port,
          what: `sandbox ${ctx.sandbox.name}'s proxy port`,
          bind: () => {
            if (lib) {
              // The forwarder's own handoff, in-process: the proxy accepts on the port itself (one relay, not two), and
              // the relay takes over whenever it does not.
              const listener = lib.listenLoopback(port);
              const h = startHandoff({ lib, listener, handoffPath: join(ctx.sockets.dir, LISTEN_SOCKET), socketPath: ctx.sockets.proxy, log: (line) => ctx.log.warn(line) });
              return { port: listener.port, detail: () => (h.held() ? "the proxy accepts on it" : "relayed"), stop: () => (h.stop(), lib.close(listener.fd)) };
            }
            const r = startTcpRelay({ port, socketPath: ctx.sockets.proxy });
            return { port: r.port, detail: () => `relayed, ${r.active()} open connection(s)`, stop: () => r.close() };
          },
        });
      } catch (e) {
        if (e instanceof SbxError) throw e;
        throw new SbxError("unavailable", `cannot listen on 127.0.0.1:${port} for sandbox '${ctx.sandbox.name}': ${(e as Error).message}`, {
          hint: `\`ss -ltnp 'sport = :${port}'\` shows what holds it; stop it, then \`sbx run ${ctx.sandbox.name}\` again.`,
        });
      }
      ctx.log.info("loopback proxy port up", { port });
      const u = up;
      return {
        health: () =>
          existsSync(ctx.sockets.proxy)
            ? { ok: true, detail: `127.0.0.1:${u.port} → proxy (${u.detail()})` }
            : { ok: false, detail: `127.0.0.1:${u.port} relays to ${ctx.sockets.proxy}, which is gone` },
        async stop() {
          u.stop();
        },
      };
    },
  };
}
