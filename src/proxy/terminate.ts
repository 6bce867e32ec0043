// The carrier for a host a secret is bound to, or whose requests a rule judges (core/rules.ts): the sandbox's TLS is ended here, with a certificate for that host signed
// by sbx's CA (which the sandbox trusts, and whose key never enters it), so each request inside can be read by the one
// reader (connection.ts) and its placeholders swapped for values (core/bound-secret.ts) before it goes on, over TLS
// verified against the host's trust store, to the address the decision checked. Every other host stays an opaque
// tunnel (tunnel.ts): nothing is terminated that need not be.
import { TLSSocket, type SecureContext } from "node:tls";
import type { Duplex } from "node:stream";
import type { Socket } from "node:net";
import { isIP } from "node:net";
import { boundTo, reflectionPairs, swapRequest, type BoundSecret, type SecretUse } from "../core/bound-secret";
import { classify } from "../core/addresses";
import { normalizeHost } from "../core/allowlist";
import { StreamReplacer } from "../core/stream-replace";
import { formsMemo } from "../core/reflection-forms";
import { ClientConnection, rawTarget, type PlainPreparer, type Prepared, type RequestPreparer } from "./connection";
import { hold, type Carrier, type ProxyContext } from "./context";
import { authorityText, reachText, type Allowed } from "./decision";
import { egressDestination, type Destination } from "./forward";
import type { Header, RequestHead } from "./http1";
import { cut } from "./refusal";
import { tlsDial, UpstreamPool } from "./upstream";
import { serveTls, type NativeTls } from "./native-tls";
import { leafPem } from "../tls/leaf-context";

/** What the terminator needs of the daemon: the sandbox's bound secrets, their values, and certificates for hosts. */
export interface SecretBinding {
  /** The secrets bound for this sandbox now, with its placeholders (read per connection and per request). */
  secrets(): readonly BoundSecret[];
  /** The values of these secrets, read from their sources now; one that cannot be read is absent (and said). */
  values(names: readonly string[]): Promise<Map<string, string>>;
  /** A TLS context whose certificate names `host`, signed by the CA the sandbox trusts (kept per host). */
  contextFor(host: string): Promise<SecureContext>;
  /** CA certificates the upstream's chain is verified against (PEM); undefined: the runtime's own roots. */
  readonly upstreamCa?: string | undefined;
  /** A secret was swapped into a request (what `sbx secret list` shows as last used). */
  used?(name: string): void;
}

const enc = new TextEncoder();

/** Pure: whether any secret is bound to this host: then its connections are terminated. */
export function terminates(secrets: readonly BoundSecret[], host: string): boolean {
  return secrets.some((s) => boundTo(s, host));
}

export class Terminator implements RequestPreparer, PlainPreparer {
  /** One pool of TLS connections per host and port (a bounded set: the hosts secrets are bound to). */
  private readonly pools = new Map<string, UpstreamPool>();
  private readonly trust = new Map<string, string>();
  /** Each bound value's spellings an answer is masked for (never reflected), made once per value. */
  private readonly forms = formsMemo();
  private lastCa: { text: string; hash: string } | undefined;

  constructor(
    private readonly ctx: ProxyContext,
    private readonly binding: SecretBinding,
  ) {}

  /** The carrier: the client's TLS ended here, then its requests read one by one. */
  readonly carrier: Carrier = (allowed, client, first, replies) => {
    if (replies) client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    void this.binding.contextFor(allowed.host).then(
      (secureContext) => this.serve(allowed, client, first, secureContext),
      (e: Error) => {
        this.ctx.emit({ type: "error", sandbox: this.ctx.sandbox, path: allowed.path, method: "CONNECT", host: allowed.host, port: allowed.port, address: allowed.address, message: `no certificate for ${allowed.host}: ${e.message}`, at: Date.now() });
        cut(client);
      },
    );
  };

  private serve(allowed: Allowed, client: Duplex, first: Buffer, secureContext: SecureContext): void {
    if (client.destroyed) return;
    const native = this.serveNative(allowed, client, first, secureContext);
    if (native) {
      hold(this.ctx, native as unknown as Duplex);
      native.on("error", () => native.destroy());
      return void new ClientConnection(native as unknown as Socket, this.ctx, { kind: "terminated", allowed, terminator: this });
    }
    if (first.length > 0) client.unshift(first);
    const tls = new TLSSocket(client as Socket, {
      isServer: true,
      secureContext,
      ALPNProtocols: ["http/1.1"],
      // The name the client's TLS asks for must be the one the connection was allowed for: a certificate for another
      // host is never made here (a client that sends none gets the allowed host's).
      SNICallback: (sni, cb) => {
        const asked = normalizeHost(sni);
        if (asked !== allowed.host) {
          this.ctx.decider.deny(allowed.path, "CONNECT", allowed.host, allowed.port, "server-name-mismatch", `its TLS asks for ${sni}`, null);
          return cb(new Error(`TLS server name ${sni} is not ${allowed.host}`), undefined);
        }
        cb(null, secureContext);
      },
    });
    hold(this.ctx, tls);
    tls.on("error", () => tls.destroy());
    client.on("error", () => tls.destroy());
    new ClientConnection(tls, this.ctx, { kind: "terminated", allowed, terminator: this });
  }

  /**
   * The client's TLS on Bun's own socket (native-tls.ts), its server name checked once its handshake is done (Bun's
   * server takes no SNI callback: a client that asked for another name gets the allowed host's certificate, which its
   * own check refuses, and is cut here); null where it cannot be (node:tls then, as before).
   */
  private serveNative(allowed: Allowed, client: Duplex, first: Buffer, secureContext: SecureContext): NativeTls | null {
    // Bun's SecureContext keeps no PEM: a context made elsewhere than leafContext stays with node:tls.
    const pem = leafPem(secureContext);
    if (!pem) return null;
    return serveTls(client as Socket, first, pem, (sni) => {
      if (sni === "" || normalizeHost(sni) === allowed.host) return true;
      this.ctx.decider.deny(allowed.path, "CONNECT", allowed.host, allowed.port, "server-name-mismatch", `its TLS asks for ${sni}`, null);
      return false;
    });
  }

  /** Closes the pools (the proxy is closing). */
  close(): void {
    for (const p of this.pools.values()) p.close();
    this.pools.clear();
  }

  /** The pool for a host and port, under the trust in force now: a change of trust (a CA added or removed) drops what was verified before. */
  private pool(allowed: Allowed): UpstreamPool {
    const ca = this.binding.upstreamCa;
    const key = `${allowed.host}|${allowed.port}`;
    // The same string as last time (the daemon keeps it until its file changes) is not hashed again.
    if (ca !== this.lastCa?.text) this.lastCa = ca === undefined ? undefined : { text: ca, hash: Bun.hash(ca).toString(36) };
    const trust = this.lastCa?.hash ?? "roots";
    let p = this.pools.get(key);
    if (p && this.trust.get(key) !== trust) {
      p.close();
      p = undefined;
    }
    if (!p) {
      const servername = isIP(allowed.host) ? undefined : allowed.host;
      this.trust.set(key, trust);
      // Verified against the host's roots (or the trust in force), its name the allowed host's whatever address is dialled.
      p = new UpstreamPool(this.ctx.connectTimeoutMs, undefined, tlsDial({ ...(servername ? { servername } : {}), ...(ca ? { ca } : {}) }), "secureConnect");
      this.pools.set(key, p);
    }
    return p;
  }

  /**
   * One request read inside the terminated connection: its Host must name the allowed host, then the secrets bound to
   * it are swapped in where they may be (the rest stay placeholders, said), and it goes up as `head` to `dest`.
   */
  async prepare(allowed: Allowed, head: RequestHead): Promise<Prepared> {
    const authority = allowed.port === 443 ? (allowed.host.includes(":") ? `[${allowed.host}]` : allowed.host) : authorityText(allowed.host, allowed.port);
    const hostHeader = head.headers.find(([n]) => n.toLowerCase() === "host")?.[1];
    let target = head.target;
    if (!target.startsWith("/")) {
      // Absolute form inside the tunnel: only for the same authority.
      let u: URL;
      try {
        u = new URL(target);
      } catch {
        return { ok: false, message: "sbx proxy: malformed request target.\n" };
      }
      if (u.protocol !== "https:" || normalizeHost(u.hostname) !== allowed.host || (u.port === "" ? 443 : Number(u.port)) !== allowed.port) {
        this.mismatch(allowed, head.method, `its request names ${u.host}`);
        return { ok: false, message: `sbx proxy: this connection is for ${authority}; the request names ${u.host}.\n` };
      }
      target = `${u.pathname}${u.search}`;
    }
    if (hostHeader !== undefined && !sameAuthority(hostHeader, allowed)) {
      this.mismatch(allowed, head.method, `its Host says ${hostHeader}`);
      return { ok: false, message: `sbx proxy: this connection is for ${authority}; its Host header says ${hostHeader}.\n` };
    }
    // A rule names the host: the request is judged on its canonical path, which is what goes on.
    const judged = this.ctx.decider.request(allowed, head.method, target);
    if (!judged.ok) return { ok: false, message: "", denied: judged };
    return this.swapped(this.binding.secrets(), allowed, allowed.host, head, judged.target, authority, this.pool(allowed), "over verified TLS");
  }

  /**
   * A plain HTTP request whose authority was checked (`allowed`; `url` as the client named it, `target` the judged
   * one when a rule judged it): the secrets bound to its name are swapped in only when it goes to a service of this
   * host published for the sandbox (the decision's source, a loopback address: the bytes never leave the machine), by
   * the same code as a terminated request's. Anywhere else a value never goes over plain HTTP: a placeholder present
   * stays as it is, and is said as outside.
   */
  async plain(allowed: Allowed, url: URL, head: RequestHead, target: string | undefined): Promise<Prepared> {
    const secrets = this.binding.secrets();
    const dest = () => egressDestination(this.ctx, allowed, head.method, url, target);
    if (secrets.length === 0) return { ok: true, head, dest: dest() };
    const named = normalizeHost(url.hostname) ?? url.hostname;
    const raw = target ?? rawTarget(head.target);
    if (publishedService(allowed) && secrets.some((s) => boundTo(s, named))) return this.swapped(secrets, allowed, named, head, raw, url.host, this.ctx.pool, "");
    const why = `plain HTTP to ${named}: a secret goes only over TLS that sbx verifies, or to a service of this host published for the sandbox`;
    const r = swapRequest(secrets, new Map(), { method: head.method, host: named, target: raw, headers: head.headers }, why);
    this.audit(allowed, named, head.method, raw.split("?")[0]!, r.uses);
    return { ok: true, head, dest: dest() };
  }

  private audit(allowed: Allowed, named: string, method: string, pathOnly: string, uses: readonly SecretUse[]): void {
    for (const u of uses) {
      if (u.action === "used") this.binding.used?.(u.name);
      this.ctx.emit({ type: "secret", sandbox: this.ctx.sandbox, path: allowed.path, method, host: named, port: allowed.port, target: pathOnly, name: u.name, action: u.action, reason: u.reason, at: Date.now() });
    }
  }

  /**
   * The one way a request goes up with secrets swapped in (terminated, or plain to a published service): its
   * placeholders swapped for `named`'s secrets within their scope on the canonical `target`, its answer read whole and
   * every value in it turned back into its placeholder, to `pool` (TLS to the host, or the plain pool).
   */
  private async swapped(secrets: readonly BoundSecret[], allowed: Allowed, named: string, head: RequestHead, target: string, authority: string, pool: UpstreamPool, over: string): Promise<Prepared> {
    // Every bound secret's value (not only this host's): an answer holding any of them comes back masked.
    const values = await this.binding.values(secrets.map((s) => s.name));
    const swapped = swapRequest(secrets, values, { method: head.method, host: named, target, headers: head.headers });
    const pathOnly = swapped.target.split("?")[0]!;
    this.audit(allowed, named, head.method, pathOnly, swapped.uses);
    // The answer is read whole for values to turn back: never encoded, so ask for none.
    const headers: Header[] = [...swapped.headers.filter(([n]) => n.toLowerCase() !== "accept-encoding"), ["Accept-Encoding", "identity"]];
    const reflect = [...reflectionPairs(secrets, values, this.forms), ...swapped.reflect].map((p) => ({ from: enc.encode(p.from), to: enc.encode(p.to) }));
    // The one way anything of the answer is shown, to the sandbox or in sbx's own words (its 502, the error event that
    // `sbx logs`, the dashboard and chat are made of): each value turned back into its placeholder. The upstream chose
    // every byte of it, the reason phrase, header names and what a parse error quotes included.
    const shown = (text: string) => replaceText(text, reflect);
    const bodyPairs = swapped.bodyPairs.map((p) => ({ from: enc.encode(p.from), to: enc.encode(p.to) }));
    const dest = this.destination(allowed, head.method, swapped.target, pathOnly, authority, shown, pool, over, {
      requestBody: bodyPairs.length > 0 ? new StreamReplacer(bodyPairs) : null,
      responseHead: (h) => {
        const enc = h.headers.find(([n]) => n.toLowerCase() === "content-encoding")?.[1]?.trim().toLowerCase();
        if (enc !== undefined && enc !== "" && enc !== "identity") {
          throw new Error(`a body encoded as ${enc} (sbx asked for none), which cannot be checked for a secret's value`);
        }
        return { reason: shown(h.reason), headers: h.headers.map(([n, v]) => [shown(n), shown(v)] as Header) };
      },
      responseBody: new StreamReplacer(reflect),
    });
    return { ok: true, head: { ...head, target: swapped.target, headers }, dest };
  }

  private mismatch(allowed: Allowed, method: string, detail: string): void {
    this.ctx.decider.deny(allowed.path, method, allowed.host, allowed.port, "server-name-mismatch", detail, null);
  }

  /** `pathOnly` is what the audit says: the path, never the query (which may hold a value swapped in). */
  private destination(allowed: Allowed, method: string, target: string, pathOnly: string, host: string, shown: (text: string) => string, pool: UpstreamPool, over: string, rewrite: NonNullable<Destination["rewrite"]>): Destination {
    const ctx = this.ctx;
    const started = performance.now();
    ctx.inFlight++;
    return {
      pool,
      address: allowed.address,
      port: allowed.port,
      via: allowed.parent ? { route: allowed.parent, host: allowed.host } : null,
      target,
      host,
      rewrite,
      done(ok, bytesUp, bytesDown) {
        ctx.inFlight--;
        if (!ok) return;
        const { port, address, source, pattern, path } = allowed;
        ctx.emit({ type: "closed", sandbox: ctx.sandbox, path, method, host: allowed.host, port, address, ...(allowed.parent ? { via: allowed.parent.endpoint.shown } : {}), source, pattern, target: pathOnly, bytesUp, bytesDown, durationMs: Math.round(performance.now() - started), at: Date.now() });
      },
      failure(why, connected) {
        const at = reachText(allowed);
        const message = connected ? `${at} sent ${shown(why)}` : `could not reach ${at}${over ? ` ${over}` : ""}: ${shown(why)}`;
        ctx.emit({ type: "error", sandbox: ctx.sandbox, path: allowed.path, method, host: allowed.host, port: allowed.port, address: allowed.address, ...(allowed.parent ? { via: allowed.parent.endpoint.shown } : {}), message, at: Date.now() });
        return message;
      },
    };
  }
}

/** A header value with every value turned back into its placeholder. */
function replaceText(v: string, pairs: readonly { from: Uint8Array; to: Uint8Array }[]): string {
  if (pairs.length === 0) return v;
  const r = new StreamReplacer(pairs);
  // Header values are read and written as latin1 (http1.ts): byte for byte.
  const a = r.push(Buffer.from(v, "latin1"));
  const b = r.end();
  return Buffer.concat([a, b]).toString("latin1");
}

/**
 * Pure: whether an allowed connection goes to a service of this host published for the sandbox: allowed as published
 * (an exact loopback address and port, core/egress.ts), to a loopback address. The one place plain HTTP may carry a
 * secret's value: it never leaves the machine.
 */
export function publishedService(allowed: Pick<Allowed, "source" | "address">): boolean {
  return allowed.source === "published" && classify(allowed.address) === "loopback";
}

/** Whether a Host header names the allowed host and port (443 implied). */
function sameAuthority(hostHeader: string, allowed: Allowed): boolean {
  const t = hostHeader.trim();
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(t);
  if (!m) return false;
  return normalizeHost(m[1]!) === allowed.host && (m[2] === undefined ? 443 : Number(m[2])) === allowed.port;
}
