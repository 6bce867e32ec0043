// The egress proxy as a guard: one proxy per sandbox on its own socket, policy read from the store per request, decisions audited.
// For a kind whose proxy listener can be handed over (DriverCaps.handsOverListener) it also serves listen.sock, where
// the forwarder (in the sandbox, or the loopback guard) hands over its 127.0.0.1:<port> listener so the proxy accepts
// on it itself, and a container its transparent path's 0.0.0.0 listeners. It keeps the sandbox's name map (the
// transparent path), and answers the DNS of a guest whose firewall redirects it to UDP on its proxy port.
import type { OriginForwarder } from "../proxy/connection";
import { existsSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import type { Socket } from "node:net";
import { fdPassing, loopbackListener, type FdPassing, type SocketInfo } from "../../shims/fd-pass";
import { isNameAddress, transparentOn, transparentPortsOf } from "../core/transparent";
import { serveDnsStub, type DnsStub } from "../proxy/dns-stub";
import { NameMap } from "../policy/name-map";
import { serveListenerHandoff, type HandoffServer } from "../proxy/listener-handoff";
import type { EgressEvent } from "../core/egress-events";
import { startEgressProxy, type Resolver } from "../proxy/egress-proxy";
import type { ParentRouting } from "../proxy/decision";
import type { SecretBinding } from "../proxy/terminate";
import { createDecisionSink, type DecisionSinkOptions } from "../policy/decision-sink";
import { policyFor, PolicyService } from "../policy/service";
import { feedFromEgress, type FeedEvent } from "../events/feed";
import type { GuardContext, GuardHandle, SandboxGuard } from "./guards";
import { claimSandboxPort, type PortClaimOptions } from "./port-claim";
import { SbxError } from "../core/errors";

export interface ProxyGuardOptions {
  /** DNS seam (tests); the system resolver otherwise. */
  resolve?: Resolver;
  /** Desktop/terminal notification of a new pending approval. */
  notify?: DecisionSinkOptions["notify"];
  /** Requests addressed to the proxy itself (the LLM key proxy's `/llm/<provider>` paths), per sandbox. */
  originHandler?: (ctx: GuardContext) => (req: IncomingMessage, res: ServerResponse) => void;
  /** Origin-form requests the proxy sends on by its own reader and pool (the LLM routes), per sandbox. */
  originForwarder?: (ctx: GuardContext) => OriginForwarder;
  /** The live feed (dashboard, chat bot, desktop notifier): every decision, after the sink recorded it. */
  publish?: (e: FeedEvent) => void;
  /** Whose guest a uid is: the DNS stub's port is taken back from another sandbox's guest that squats it. */
  guestOf?: PortClaimOptions["guestOf"];
  /** The secrets bound to hosts that this sandbox's proxy carries (secrets/bound.ts): their hosts are terminated. */
  secrets?: (ctx: GuardContext) => SecretBinding;
  /** The host's parent proxy, which the proxy's connections go through where it applies (sys/parent.ts). */
  parent?: ParentRouting;
}

/**
 * Why a listener handed over on listen.sock is not taken, or null: the proxy's own (a loopback listener), or, for a
 * container with the transparent path, 0.0.0.0 on one of its transparent ports (`ports`: 80, 443 and those its
 * allowlist names; null when it has no transparent path). Inside a container with no network 0.0.0.0 is its own
 * loopback and nothing else; a user-account guest's listen.sock is the daemon's alone, and it hands over only
 * 127.0.0.1 (a 0.0.0.0 on the host would let the network in).
 */
export function handedListener(info: SocketInfo | { error: string }, ports: readonly number[] | null): string | null {
  if ("error" in info || info.address !== "0.0.0.0") return loopbackListener(info);
  if (ports === null) return "bound to 0.0.0.0, and this sandbox has no transparent path";
  if (!info.stream || !info.listening) return "not a listening stream socket";
  return ports.includes(info.port) ? null : `bound to 0.0.0.0:${info.port}, not a transparent port`;
}

/** The handoff socket's name in a sandbox's socket dir (/run/sbx/listen.sock inside; shims/forwarder.ts's default). */
export const LISTEN_SOCKET = "listen.sock";

export function proxyGuard(opts: ProxyGuardOptions = {}): SandboxGuard {
  return {
    name: "proxy",
    async start(ctx): Promise<GuardHandle> {
      const sink = createDecisionSink(ctx.store, opts.notify ? { notify: opts.notify } : {});
      const sandboxId = ctx.sandbox.id;
      const names = new NameMap(ctx.store, sandboxId);
      const once = new PolicyService({ store: ctx.store });
      let proxy;
      try {
        proxy = await startEgressProxy({
          socketPath: ctx.sockets.proxy,
          sandbox: { id: sandboxId, name: ctx.sandbox.name },
          // Read per request: `sbx allow` takes effect on the next request, with no restart.
          policy: () => policyFor(ctx.store, sandboxId),
          // A one-time approval (`--once`) is used up by the connection it lets through, audited.
          consume: (pattern) => once.useOnce(sandboxId, pattern),
          onDecision: opts.publish ? withFeed(ctx, sink.onDecision, opts.publish) : sink.onDecision,
          ...(opts.resolve ? { resolve: opts.resolve } : {}),
          ...(opts.originHandler ? { originHandler: opts.originHandler(ctx) } : {}),
          ...(opts.originForwarder ? { originForwarder: opts.originForwarder(ctx) } : {}),
          names,
          ...(opts.secrets ? { secrets: opts.secrets(ctx) } : {}),
          ...(opts.parent ? { parent: opts.parent } : {}),
        });
      } catch (e) {
        sink.close();
        throw e;
      }
      const p = proxy;
      let handoff: HandoffServer | null = null;
      const caps = ctx.driver.caps;
      // Whoever holds the sandbox's proxy port hands the listener over (a container's forwarder; a Linux guest's
      // loopback guard, in-process), where its kind can (fd passing); else it relays.
      const lib = caps.handsOverListener ? fdPassing() : null;
      // A guest whose transparent path is the firewall's redirect: its connections arrive on its proxy port, told from
      // its proxy clients by where they were headed before the redirect (a named address, any port).
      const guestTransparent = caps.transparent === "redirect" && transparentOn(ctx.spec);
      const redirected = (l: FdPassing) => (s: Socket) => {
        const fd = (s as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
        const o = typeof fd === "number" ? l.originalDst(fd) : null;
        return o !== null && isNameAddress(o.address) ? o : null;
      };
      if (lib) {
        try {
          // A container's transparent path: its forwarder's 0.0.0.0 listeners on the transparent ports, handed over too.
          const transparent = transparentOn(ctx.spec) && caps.transparent === "listeners";
          // Read at each handoff: `sbx allow host:8443` adds 8443 to the ports the forwarder may hand over.
          const ports = () => (transparent ? transparentPortsOf(policyFor(ctx.store, sandboxId)) : null);
          handoff = serveListenerHandoff({
            lib,
            path: join(ctx.sockets.dir, LISTEN_SOCKET),
            refuse: (info) => handedListener(info, ports()),
            // The proxy's own, and one per transparent port: a sandbox makes the daemon hold at most these.
            slot: (info) => (info.address === "0.0.0.0" ? `transparent:${info.port}` : "proxy"),
            adopt: (fd, info) =>
              info.address === "0.0.0.0" ? p.serveTransparent(fd) : p.serveListener(fd, guestTransparent ? { transparentOf: redirected(lib) } : undefined),
            log: ctx.log,
          });
        } catch (e) {
          // The forwarder then keeps relaying: slower, never less safe.
          ctx.log.warn("cannot serve the listener handoff; the forwarder relays", { err: (e as Error).message });
        }
      }
      const h = handoff;
      // The guest's DNS, redirected by the firewall to UDP on its proxy port: answered from its name map.
      let dns: DnsStub | null = null;
      const port = guestTransparent ? ctx.driver.hostProxyPort(ctx.spec) : null;
      if (port !== null) {
        try {
          // The guest's lookups are redirected to this port whoever holds it: held by another sandbox's guest, that guest
          // would read every name this one looks up. Taken back from a guest; held by anything else, the start is refused.
          dns = await claimSandboxPort(ctx, opts.guestOf ? { guestOf: opts.guestOf } : {}, { proto: "udp", port, what: `sandbox ${ctx.sandbox.name}'s DNS port`, bind: () => serveDnsStub("127.0.0.1", port, names) });
        } catch (e) {
          if (e instanceof SbxError) {
            handoff?.close();
            await p.close();
            sink.close();
            throw e;
          }
          // Its names then resolve to nothing: nothing gets out that way either.
          ctx.log.warn("cannot serve the guest's DNS stub", { port, err: (e as Error).message });
        }
      }
      const d = dns;
      return {
        health: () =>
          existsSync(p.socketPath)
            ? { ok: true, detail: `${p.active()} open connection(s)${h?.held() ? "; accepting on the handed-over listener" : ""}` }
            : { ok: false, detail: `socket ${p.socketPath} is gone` },
        async stop() {
          d?.close();
          h?.close();
          await p.close();
          sink.flush();
          sink.close();
        },
      };
    },
  };
}

/**
 * The sink first (so a denial's pending approval exists), then the feed, with that approval's id and count so
 * listeners can tell a new request from a repeat. A failing listener never affects the proxy.
 */
function withFeed(ctx: GuardContext, record: (e: EgressEvent) => void, publish: (e: FeedEvent) => void): (e: EgressEvent) => void {
  return (e) => {
    record(e);
    // A secret's uses are in the audit (`sbx logs`); the feed shows connections.
    if (e.type === "secret") return;
    try {
      // One row, not the sandbox's whole list: a flood of denials costs one lookup each.
      const approval = e.type === "denied" ? ctx.store.findPending(e.sandbox.id, e.host, e.port) : null;
      publish(feedFromEgress(e, approval ? { id: approval.id, count: approval.count } : null));
    } catch (err) {
      ctx.log.warn("feed publish failed", { err });
    }
  };
}
