// A per-build relay: lends an image build's steps (apt, npm, pip in a RUN) the parent proxy when a build cannot be
// given it as it is: it wants a login (which never enters a build: any step could read it, and a Dockerfile's `ARG
// HTTPS_PROXY` would keep it in the image's history), or it is on the host's loopback (a build container's loopback
// is its own). One relay per build: it listens on the engine's default bridge gateway (the address a build's RUN
// containers reach the host at; never 0.0.0.0, never loopback) on a port of its own, with a password made for this
// build alone (`sbx:<random>`, compared in constant time); it speaks to the parent with the real credentials, which stay
// in the daemon; when the build ends it closes, its connections are cut and its password is dead.
//
// What a build may reach through it: any host:port the parent would be asked for by the daemon itself (NO_PROXY names
// are refused here: the build's steps are given NO_PROXY and go to those straight out, as the engine's network
// allows), except the host's own loopback (a loopback literal, `localhost`, 0.0.0.0), the relay's own address and the
// parent itself: the relay makes a loopback parent reachable from a build, and must not make the host's loopback
// services reachable with it (a name the parent itself resolves to loopback is the parent's policy: squid's
// `to_localhost` refuses it by default).
// Not the sandbox's allowlist: a build is not a sandbox; it runs on the engine's bridge network, whose steps already
// reach whatever the host's network lets out directly. The relay adds the person's login to that, and nothing else.
// The build is the person's (sbx create, rebuild, a service's start), but its Dockerfile is whatever the repo holds, so
// a sandbox's work the person merged may run there: it gets the person's proxy for the build's minutes, as it would in
// the person's own `docker build`, and never the login itself.
// Who else reaches the gateway address: host processes and containers on the default bridge (sbx's own sandboxes and
// services have no network, `--network none`; a user-account sandbox's nftables rules refuse it): the password keeps
// them out, and it is never in an argv (`docker build --build-arg HTTPS_PROXY` takes the value from the CLI's env).
import { createServer, type Server, type Socket } from "node:net";
import { randomBytes, timingSafeEqual } from "node:crypto";
import { canonicalIp, classify } from "../core/addresses";
import {
  basicAuthorization,
  buildProxyArgs,
  buildRelayWanted,
  connectAuthority,
  readForwardOrConnect,
  relayRefusal,
  type BuildProxy,
} from "../core/parent-proxy";
import { forwardThroughParent, relayThroughParent, type ParentRouter } from "./parent";

/** How long a step has to send its request once it is connected. */
const HEAD_TIMEOUT_MS = 10_000;
/** At most this many connections at once (a build's parallel downloads fit; a flood does not hold the daemon). */
const MAX_CONNECTIONS = 128;

export interface BuildRelay {
  /** `http://sbx:<password>@<gateway>:<port>`: what the build's proxy args carry. */
  readonly url: string;
  readonly address: string;
  readonly port: number;
  /** Stops it: not listening, every connection through it cut, its password dead. */
  close(): Promise<void>;
}

/** The parent proxy for one build: its args and notes, and its end (the relay closes, when there is one). */
export interface BuildProxyLease extends BuildProxy {
  release(): Promise<void>;
}

/** Whether a destination is the host's own loopback (by literal or name): never carried for a build. */
function hostLoopback(host: string): boolean {
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  const ip = canonicalIp(host);
  if (ip === null) return false;
  const k = classify(ip);
  return k === "loopback" || k === "unspecified" || (k === "reserved" && ip.startsWith("0."));
}

/**
 * Opens a relay for one build on `address` (the engine's bridge gateway, an IPv4 address of this machine).
 * Fails (EADDRNOTAVAIL) when the address is not this machine's: an engine elsewhere, whose builds could not reach it.
 */
export async function openBuildRelay(router: ParentRouter, address: string): Promise<BuildRelay> {
  const ip = canonicalIp(address);
  if (ip === null || ip.includes(":") || classify(ip) === "unspecified" || classify(ip) === "loopback") throw new Error(`${address} is not a bridge gateway a relay may listen on`);
  const token = randomBytes(18).toString("base64url");
  const want = Buffer.from(basicAuthorization("sbx", token));
  const sockets = new Set<Socket>();
  const parents = new Set(router.endpoints().map((e) => e.host));
  const server: Server = createServer({ allowHalfOpen: true }, (s) => serve(s));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, ip, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.unref();
  const port = (server.address() as { port: number }).port;
  let closed = false;

  const track = (s: Socket) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  };
  const authorized = (given: string | null) => {
    if (closed || given === null) return false;
    const g = Buffer.from(given);
    return g.length === want.length && timingSafeEqual(g, want);
  };

  let clients = 0;
  function serve(s: Socket): void {
    // Counted here rather than by node:net's maxConnections, which this runtime's servers may not honour.
    if (clients >= MAX_CONNECTIONS) return void s.destroy();
    clients++;
    s.once("close", () => clients--);
    track(s);
    s.on("error", () => s.destroy());
    s.setTimeout(HEAD_TIMEOUT_MS, () => s.destroy());
    let buf: Buffer = Buffer.alloc(0);
    let read = false;
    const answer = (status: 400 | 403 | 405 | 407 | 502, why: string) => {
      s.off("data", onData);
      s.end(relayRefusal(status, why));
    };
    const onData = (d: Buffer) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
      const r = readForwardOrConnect(buf);
      if (r.kind === "more") return;
      if (r.kind === "bad") return answer(r.status, r.why);
      if (!authorized(r.authorization)) return answer(407, "this relay lends the parent proxy to one image build of sbx's, with that build's password");
      // The relay's own address too: a loop through the parent back to it would only hold connections.
      if (hostLoopback(r.host) || parents.has(r.host) || canonicalIp(r.host) === ip) return answer(403, `${connectAuthority(r.host, r.port)} is this machine's own or the parent proxy itself, which a build is not lent`);
      const route = router.route(r.kind === "connect" ? "https" : "http", r.host);
      if (route === null) return answer(403, `${r.host} does not go through the parent proxy (NO_PROXY): a build reaches it straight out`);
      s.off("data", onData);
      read = true;
      s.pause();
      s.setTimeout(0);
      const up = r.kind === "connect" ? relayThroughParent(s, route, r.host, r.port, buf.subarray(r.size)) : forwardThroughParent(s, route, r.head, buf.subarray(r.size), r.body);
      if (up) track(up);
    };
    // Gone before its request (half-open is kept for what follows a request, not for a client that never sent one).
    s.once("end", () => {
      if (!read) s.destroy();
    });
    s.on("data", onData);
  }

  return {
    url: `http://sbx:${token}@${ip}:${port}`,
    address: ip,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        closed = true;
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * The parent proxy for one image build: nothing without a parent; its address as it is when a build reaches it so
 * (no login, not on loopback); else a relay on the engine's bridge gateway (`gateway`, asked of the engine) for the
 * build's length. A relay that cannot be had (no gateway, an engine elsewhere) leaves that parent out, with a note.
 */
export async function leaseBuildProxy(router: ParentRouter | null, gateway: () => Promise<string | null>): Promise<BuildProxyLease> {
  const s = router?.settings ?? null;
  const none = async () => undefined;
  if (router === null || !buildRelayWanted(s)) return { ...buildProxyArgs(s), release: none };
  let gw: string | null = null;
  try {
    gw = await gateway();
  } catch {
    gw = null;
  }
  if (gw === null) return { ...buildProxyArgs(s, { unavailable: "the container engine names no gateway on its default bridge network (where build steps run)" }), release: none };
  let relay: BuildRelay;
  try {
    relay = await openBuildRelay(router, gw);
  } catch (e) {
    return { ...buildProxyArgs(s, { unavailable: `it cannot listen on the engine's bridge gateway ${gw} (${(e as Error).message}; an engine on another machine?)` }), release: none };
  }
  return { ...buildProxyArgs(s, { url: relay.url }), release: () => relay.close() };
}
