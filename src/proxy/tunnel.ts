// The opaque tunnel: how an allowed CONNECT (or a transparent connection on a port that is not plain HTTP) is carried
// to the checked address. The client's first bytes are read before any of them go up: a TLS ClientHello must name the
// host that was checked (or none), or the tunnel is refused (`server-name-mismatch`): a connection checked as one name
// must not ask the server for another (domain fronting). Bytes the server sends first flow at once.
import { connect, Socket } from "node:net";
import type { Duplex } from "node:stream";
import { canonicalIp } from "../core/addresses";
import { normalizeHost } from "../core/allowlist";
import { readClientHello } from "../core/tls";
import { hold, type Carrier, type ProxyContext } from "./context";
import { reachText, type Allowed } from "./decision";
import { dialParent, TUNNEL_OPEN, type ParentDial } from "../sys/parent";
import { headerSafe } from "./http1";
import { badGateway, cut, endWith, refusal } from "./refusal";
import { adoptPair, type NativePair } from "./native-relay";

/** How long a tunnel waits for the rest of a ClientHello the client has begun before it gives up. */
const HELLO_TIMEOUT_MS = 10_000;

/** The opaque tunnel as a carrier: one `Tunnel` per allowed connection. */
export function opaqueTunnel(ctx: ProxyContext): Carrier {
  return (allowed, client, first, replies) => void new Tunnel(ctx, allowed, client, first, replies);
}

/**
 * One tunnel. On the proxy path the client hears `200 Connection Established` once the server is reached (or a 502);
 * on the transparent path, nothing. Half-close both ways: pipe() ends the other side when one side ends; nothing is cut
 * until both are done.
 */
class Tunnel {
  private readonly started = performance.now();
  private readonly up: Socket;
  /** The parent proxy's connection, when one carries it (its CONNECT is not the tunnel's bytes). */
  private readonly viaParent: ParentDial | null;
  /** The server accepted the connection. */
  private established = false;
  /** The client's first bytes were read and agree with the checked host (or there were none). */
  private named = false;
  /** Refused after all (its first bytes named another host, or never ended): nothing flows. */
  private refused = false;
  /** Bytes go both ways. */
  private flowing = false;
  /** The client ended its side before it sent a byte (pipe() will not pass on an end that came before it). */
  private endedFirst = false;
  /** The bytes moved to Bun sockets (native-relay.ts): their counts add to node:net's from then on. */
  private native: NativePair | null = null;
  private readonly connectTimer: ReturnType<typeof setTimeout>;
  private helloTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly ctx: ProxyContext,
    private readonly v: Allowed,
    private readonly client: Duplex,
    /** What the client sent so far (after its CONNECT head), not yet judged. */
    private first: Buffer,
    private readonly replies: boolean,
  ) {
    ctx.inFlight++;
    // Straight to the checked address; or, where a parent proxy applies, a CONNECT to it for the checked name.
    this.viaParent = v.parent ? dialParent(v.parent, v.host, v.port) : null;
    this.up = this.viaParent?.socket ?? connect({ host: v.address, port: v.port, allowHalfOpen: true, noDelay: true });
    hold(ctx, this.up);
    this.connectTimer = setTimeout(() => this.up.destroy(new Error(`connect timed out after ${ctx.connectTimeoutMs} ms`)), ctx.connectTimeoutMs);
    client.once("end", this.onClientEnd);
    this.up.once(this.viaParent ? TUNNEL_OPEN : "connect", this.onConnect);
    // A proxy client sends its ClientHello only after the 200; a transparent one has sent it already.
    if (!replies) this.readFirst();
    this.up.on("error", this.onUpError);
    client.on("error", () => this.up.destroy());
    client.once("close", () => {
      this.clearHello();
      if (!this.up.destroyed && this.up.writableEnded === false) this.up.destroy();
    });
    this.up.once("close", this.onUpClose);
  }

  private clearHello(): void {
    if (this.helloTimer) clearTimeout(this.helloTimer);
  }

  private go(): void {
    if (!this.established || !this.named || this.refused || this.flowing) return;
    this.flowing = true;
    this.clearHello();
    if (!this.endedFirst && this.viaParent === null && this.client instanceof Socket) {
      // Judged and connected: from here on nothing is read, only carried. Bun sockets carry it (native-relay.ts).
      this.up.unpipe(this.client);
      this.up.pause();
      // The proxy's close cuts it through a stand-in in its socket set, there until both ends closed.
      const stand = { destroy: () => this.native?.destroy() } as unknown as Duplex;
      const native = adoptPair(this.client, this.up, this.first, () => this.ctx.sockets.delete(stand));
      if (native) {
        this.native = native;
        this.ctx.sockets.add(stand);
        return;
      }
      this.up.pipe(this.client);
    }
    if (this.first.length > 0) this.up.write(this.first);
    if (this.endedFirst) this.up.end();
    else this.client.pipe(this.up);
  }

  /**
   * A client that ends before its bytes flow: with none, the server hears the end and may still answer (it may be one
   * that speaks first); with a ClientHello begun and not whole, nothing of it goes up; what it sent whole is judged as
   * it would have been, then followed by the end. Either way nothing is left waiting for bytes that will never come.
   */
  private readonly onClientEnd = () => {
    if (this.flowing || this.refused) return;
    this.client.off("data", this.onFirst);
    this.clearHello();
    this.endedFirst = true;
    if (this.first.length > 0 && !this.named) {
      if (readClientHello(this.first).kind !== "more") return this.judge();
      this.refused = true;
      this.up.destroy();
      return void cut(this.client);
    }
    this.named = true;
    this.go();
  };

  private readonly onFirst = (c: Buffer) => {
    this.first = this.first.length === 0 ? c : Buffer.concat([this.first, c]);
    this.judge();
    // A ClientHello begun must end soon; a client that has sent nothing yet may wait as long as it likes.
    if (!this.named && !this.refused && this.helloTimer === null) {
      this.helloTimer = setTimeout(() => {
        if (this.named || this.refused) return;
        this.refused = true;
        this.client.off("data", this.onFirst);
        this.up.destroy();
        cut(this.client);
      }, HELLO_TIMEOUT_MS);
    }
  };

  /** Reads what the client sent first: carried on once it names this host (or is not TLS), refused otherwise. */
  private judge(): void {
    const { v, client } = this;
    const r = readClientHello(this.first);
    if (r.kind === "more") return;
    client.off("data", this.onFirst);
    client.pause();
    const asked = r.kind === "hello" && r.serverName !== null ? normalizeHost(r.serverName) : null;
    const ipTarget = canonicalIp(v.host) !== null;
    const mismatch =
      r.kind === "malformed"
        ? `its TLS ClientHello is malformed (${r.why})`
        : r.kind === "hello" && r.serverName !== null && !ipTarget && asked !== v.host
          ? `it was checked as ${v.host}, but its TLS ClientHello asks the server for ${headerSafe(r.serverName)}`
          : null;
    if (mismatch !== null) {
      this.refused = true;
      const denied = this.ctx.decider.deny(v.path, "CONNECT", v.host, v.port, "server-name-mismatch", mismatch, null);
      this.up.destroy();
      if (this.replies && !this.established) endWith(client, refusal(this.ctx.sandbox.name, denied, true));
      else cut(client);
      return;
    }
    this.named = true;
    this.go();
  }

  private readFirst(): void {
    if (this.first.length > 0) this.judge();
    if (this.named || this.refused) return;
    this.client.on("data", this.onFirst);
    this.client.resume();
  }

  private readonly onConnect = () => {
    clearTimeout(this.connectTimer);
    if (this.refused) return;
    this.established = true;
    if (this.replies) this.client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    this.up.pipe(this.client);
    if (this.replies) this.readFirst();
    this.go();
  };

  private readonly onUpError = (e: Error) => {
    const { v, client } = this;
    if (!this.established && !client.destroyed && !this.refused) {
      const message = `could not connect to ${reachText(v)}: ${e.message}`;
      this.ctx.emit({ type: "error", sandbox: this.ctx.sandbox, path: v.path, method: "CONNECT", host: v.host, port: v.port, address: v.address, ...(v.parent ? { via: v.parent.endpoint.shown } : {}), message, at: Date.now() });
      if (!this.replies) return void cut(client);
      return void endWith(client, badGateway(message, true));
    }
    client.destroy();
    this.up.destroy();
  };

  private readonly onUpClose = () => {
    const { v, up, client } = this;
    clearTimeout(this.connectTimer);
    this.clearHello();
    this.ctx.inFlight--;
    if (!client.destroyed && !client.writableEnded) client.destroy();
    if (!this.established || this.refused) return;
    this.ctx.emit({
      type: "closed",
      sandbox: this.ctx.sandbox,
      path: v.path,
      method: "CONNECT",
      host: v.host,
      port: v.port,
      address: v.address,
      ...(v.parent ? { via: v.parent.endpoint.shown } : {}),
      source: v.source,
      pattern: v.pattern,
      bytesUp: up.bytesWritten - (this.viaParent?.overhead.sent ?? 0) + (this.native?.written().up ?? 0),
      bytesDown: up.bytesRead - (this.viaParent?.overhead.received ?? 0) + (this.native?.written().client ?? 0),
      durationMs: Math.round(performance.now() - this.started),
      at: Date.now(),
    });
  };
}
