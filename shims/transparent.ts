// Inside a Docker sandbox, the transparent path's half that must run there: the DNS stub and the 80/443 listeners.
//
// The stub answers on <stub>:53 (UDP and TCP; the container's resolv.conf names it) from the sandbox's name map,
// which the daemon keeps: a name not seen yet is asked of the proxy socket (`GET /sbx/names?name=`), then cached for
// the process's life (the map never changes an answer). Nothing is ever sent to a resolver. The listeners on
// 0.0.0.0:<port> (the container has only its loopback) are handed to the daemon like the proxy listener
// (shims/handoff.ts), without the relay fallback: until the daemon holds one, its connections wait in the backlog.
// Binding 53, 80 and 443 as the sandbox's user needs `net.ipv4.ip_unprivileged_port_start` (set at docker create);
// no capability is added.
import type { Socket } from "bun";
import { parseQuery, respond, asksAddress, plausibleName } from "./dns";
import type { FdPassing } from "./fd-pass";
import { startHandoff, type Handoff } from "./handoff";

export interface TransparentOptions {
  lib: FdPassing;
  /** The stub's address (a loopback address of the container). */
  stub: string;
  ports: number[];
  socketPath: string;
  handoffPath: string;
  log: (line: string) => void;
}

/** What the daemon said of a name: its address, or that it may have none (cached), or that the map is full (not). */
type Known = string | "invalid";

/** The most names this stub remembers (the daemon's own map holds at most 16,384). */
const MAX_KNOWN = 20_000;

/** The longest a DNS-over-TCP connection may stay open idle (a client sends its query at once). */
const TCP_IDLE_MS = 10_000;

export function startTransparent(o: TransparentOptions): { stop(): void } {
  const dns = startDnsStub(o);
  const listeners = followTransparentPorts(o);
  return {
    stop() {
      listeners.stop();
      dns.stop();
    },
  };
}

/** The sandbox's DNS stub (UDP and TCP on its stub address): each name answered with the address the daemon gave it. */
function startDnsStub(o: TransparentOptions): { stop(): void } {
  const known = new Map<string, Known>();
  const asking = new Map<string, Promise<Known | null>>();

  /** The address the daemon gave the name, asked once per name (concurrent questions share one request). */
  const ask = (name: string): Promise<Known | null> => {
    const had = known.get(name);
    if (had !== undefined) return Promise.resolve(had);
    let p = asking.get(name);
    if (!p) {
      p = (async (): Promise<Known | null> => {
        const r = await getOverUnix(o.socketPath, `/sbx/names?name=${encodeURIComponent(name)}`);
        if (r === null) return null; // the daemon away: SERVFAIL, asked again next time
        if (r.status === 400) return "invalid";
        if (r.status !== 200) return null; // the map is full
        try {
          const body = JSON.parse(r.body) as { address?: unknown };
          return typeof body.address === "string" && /^127\.77\.\d{1,3}\.\d{1,3}$/.test(body.address) ? body.address : null;
        } catch {
          return null;
        }
      })().then((k) => {
        asking.delete(name);
        // Bounded: the daemon gives out at most 16,384 names; names it refused are kept only while there is room.
        if (k !== null && (k !== "invalid" || known.size < MAX_KNOWN)) known.set(name, k);
        return k;
      });
      asking.set(name, p);
    }
    return p;
  };

  /** The answer to one message, after asking the daemon about its name when that is needed. */
  const answer = async (msg: Uint8Array): Promise<Uint8Array | null> => {
    const q = parseQuery(msg);
    let fresh: Known | null = null;
    if (q.ok && asksAddress(q.question) && plausibleName(q.question.name) && !known.has(q.question.name)) fresh = await ask(q.question.name);
    return respond(msg, (n) => {
      const k = known.get(n) ?? (n === (q.ok ? q.question.name : "") ? fresh : null);
      return k === "invalid" ? undefined : (k ?? null);
    });
  };

  const udp: Promise<{ close(): void } | null> = Bun.udpSocket({
    hostname: o.stub,
    port: 53,
    socket: {
      data(sock, buf, port, address) {
        // A client gone before its answer makes the send (or the next receive) fail with ECONNREFUSED: nobody's
        // error. Unhandled, it ended sandbox-main, and with it the sandbox (any process in it could do that).
        void answer(new Uint8Array(buf))
          .then((out) => {
            if (out) sock.send(out, port, address);
          })
          .catch(() => undefined);
      },
      error() {
        // as above, on receive
      },
    },
  }).catch((e: Error) => {
    o.log(`sbx forwarder: no DNS stub on ${o.stub}:53 (udp): ${e.message}`);
    return null;
  });

  // DNS over TCP: two-byte length, then the message; several per connection.
  type Conn = { buf: Uint8Array; timer: ReturnType<typeof setTimeout> | null };
  const idle = (s: Socket<Conn>) => {
    if (s.data.timer) clearTimeout(s.data.timer);
    s.data.timer = setTimeout(() => s.end(), TCP_IDLE_MS);
  };
  let tcp: { stop(closeActive?: boolean): void } | null = null;
  try {
    tcp = listenTcp();
  } catch (e) {
    o.log(`sbx forwarder: no DNS stub on ${o.stub}:53 (tcp): ${(e as Error).message}`);
  }
  function listenTcp() {
    return Bun.listen<Conn>({
      hostname: o.stub,
      port: 53,
      socket: {
        open(s) {
          s.data = { buf: new Uint8Array(0), timer: null };
          idle(s);
        },
        data(s, d) {
          const all = new Uint8Array(s.data.buf.length + d.length);
          all.set(s.data.buf);
          all.set(d, s.data.buf.length);
          s.data.buf = all;
          if (all.length > 2 + 65535) return void s.end();
          while (s.data.buf.length >= 2) {
            const len = (s.data.buf[0]! << 8) | s.data.buf[1]!;
            if (s.data.buf.length < 2 + len) break;
            const msg = s.data.buf.slice(2, 2 + len);
            s.data.buf = s.data.buf.slice(2 + len);
            void answer(msg).then((out) => {
              if (!out) return void s.end();
              const framed = new Uint8Array(2 + out.length);
              framed[0] = out.length >> 8;
              framed[1] = out.length & 0xff;
              framed.set(out, 2);
              s.write(framed);
            });
          }
          idle(s);
        },
        close(s) {
          if (s.data?.timer) clearTimeout(s.data.timer);
        },
        error() {
          /* close follows */
        },
      },
    });
  }

  return {
    stop() {
      void udp.then((u) => u?.close());
      tcp?.stop(true);
    },
  };
}

/**
 * The listeners, by port: 80 and 443 at once, then whatever the daemon says the allowlist names (`sbx allow
 * host:8443`), followed with a long poll. A port a process inside already listens on is passed over (and said).
 */
function followTransparentPorts(o: TransparentOptions): { stop(): void } {
  const held = new Map<number, { handoff: Handoff; fd: number }>();
  const listen = (port: number) => {
    if (held.has(port)) return;
    try {
      const listener = o.lib.listenAll(port);
      held.set(port, { fd: listener.fd, handoff: startHandoff({ lib: o.lib, listener, handoffPath: o.handoffPath, socketPath: o.socketPath, log: o.log, relay: false }) });
    } catch (e) {
      o.log(`sbx forwarder: no transparent listener on port ${port}: ${(e as Error).message}`);
    }
  };
  const unlisten = (port: number) => {
    const h = held.get(port);
    if (!h) return;
    h.handoff.stop();
    o.lib.close(h.fd);
    held.delete(port);
  };
  for (const port of o.ports) listen(port);
  let stopped = false;
  let wanted = [...o.ports].sort((a, b) => a - b).join(",");
  const follow = async () => {
    while (!stopped) {
      const r = await getOverUnix(o.socketPath, `/sbx/transparent?known=${wanted}`, 70_000);
      let ports: number[] | null = null;
      try {
        const body = r?.status === 200 ? (JSON.parse(r.body) as { ports?: unknown }) : null;
        if (Array.isArray(body?.ports)) ports = body.ports.filter((p): p is number => Number.isInteger(p) && p > 0 && p < 65536).slice(0, 64);
      } catch {
        ports = null;
      }
      if (ports === null) {
        await Bun.sleep(2_000); // the daemon away: the listeners stay as they are
        continue;
      }
      wanted = ports.join(",");
      for (const p of [...held.keys()]) if (!ports.includes(p)) unlisten(p);
      for (const p of ports) listen(p);
    }
  };
  void follow();
  return {
    stop() {
      stopped = true;
      for (const p of [...held.keys()]) unlisten(p);
    },
  };
}

/**
 * One `GET path` over the proxy socket, `Connection: close`, read to its end (at most 16 KiB): its status and body, or
 * null when it cannot be had in time. Bun.connect rather than fetch: fetch runs on a thread of its own, made at its
 * first use, and this process must never need a new thread (at the process limit it could not have one).
 */
function getOverUnix(path: string, target: string, timeoutMs = 5_000): Promise<{ status: number; body: string } | null> {
  return new Promise((resolve) => {
    let got = "";
    let done = false;
    let sock: { end(): void } | null = null;
    const finish = (v: { status: number; body: string } | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock?.end();
      resolve(v);
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    const parse = () => {
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(got);
      const at = got.indexOf("\r\n\r\n");
      finish(m && at >= 0 ? { status: Number(m[1]), body: got.slice(at + 4) } : null);
    };
    Bun.connect<undefined>({
      unix: path,
      socket: {
        open(s) {
          sock = s;
          s.write(`GET ${target} HTTP/1.1\r\nHost: sbx\r\nConnection: close\r\n\r\n`);
        },
        data(s, d) {
          got += Buffer.from(d).toString("latin1");
          if (got.length > 16 * 1024) s.end();
        },
        close: parse,
        error: () => finish(null),
      },
    }).catch(() => finish(null));
  });
}
