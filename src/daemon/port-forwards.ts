// `sbx port`: the own loopback ports of a sandbox whose kind takes forwards (a container) reachable from the host at 127.0.0.1:<host>. The container has no
// network, so each connection the host accepts is dialed by the sandbox's exec agent, inside, to the port (its `dial`
// session). The agent hands the connection it made over (dial.sock, SCM_RIGHTS) and this process relays between the
// host's client and it, one relay with no frames (shims/relay.ts); where it cannot (no fd passing in the image's libc),
// the agent carries the bytes as frames. Listeners bind 127.0.0.1 (another address only where the forward names one:
// the person asked), exist while the sandbox's guards are up, and follow the ports its identity holds (applied again
// when `sbx port` changes them). A port the host cannot bind is said, not fatal.
import type { Socket } from "bun";
import { FrameDecoder, FrameType } from "../../shims/exec-frames";
import { relayClose, relayDrain, relayEarly, relayEnd, relayForward, relayJoin, relaySide, type RelayEnd, type Side } from "../../shims/relay";
import { bindOf, hostEndpoint, portsOf, type PortForward, type PortState } from "../core/ports";
import type { GuardHandle, SandboxGuard } from "../guards/guards";
import type { Logger } from "../sys/log";
import type { Exec } from "../sys/exec";
import { holdersText } from "../sys/port-holders";
import { spliceRelay, type SpliceRelay } from "../sys/splice-relay";
import type { ExecAgents } from "./exec-agents";

interface Open {
  forward: PortForward;
  server: { stop(closeActive?: boolean): void } | null;
  error?: string;
}

/** What one end of a forwarded connection closes on (either end's socket, or the framed fallback's session). */
type Conn = RelayEnd;

export class PortForwards {
  private readonly bySandbox = new Map<number, Map<number, Open>>();
  private readonly conns = new Map<number, Set<Conn>>();

  /**
   * `who`: what says who holds a port a forward cannot bind (a forward's port is the person's choice, so nothing that
   * holds it is ended, not even a sandbox's guest whose own server took it: the refusal names it).
   */
  constructor(
    private readonly agents: ExecAgents,
    private readonly log?: Logger,
    private readonly who?: { exec: Exec; guestOf?: (uid: number) => Promise<string | null> },
    /** Relays a handed-over connection in the kernel (splice) where it can; null: always with Bun sockets (tests). */
    private readonly splice: SpliceRelay | null = spliceRelay(),
  ) {}

  /** What a sandbox forwards now (empty when its guards are down). */
  states(sandboxId: number): PortState[] {
    return [...(this.bySandbox.get(sandboxId)?.values() ?? [])].map((o) => ({ ...o.forward, state: o.server ? "forwarding" : "error", ...(o.error ? { error: o.error } : {}) }));
  }

  /**
   * Bytes this process holds for a sandbox's forwarded connections (written by one end, not yet taken by the other):
   * bounded by the relay's backpressure to about a chunk per direction per connection, whatever a client or server does.
   */
  bufferedBytes(sandboxId: number): number {
    let n = 0;
    for (const c of this.conns.get(sandboxId) ?? []) for (const b of [...c.data.queue, ...c.data.early]) n += b.length;
    return n;
  }

  /** Whether the sandbox's guards are up (its forwards are live). */
  live(sandboxId: number): boolean {
    return this.bySandbox.has(sandboxId);
  }

  /** Makes the listeners what `forwards` says: new ones bound, gone ones closed (their connections cut). */
  async apply(sandboxId: number, forwards: readonly PortForward[]): Promise<PortState[]> {
    const open = this.bySandbox.get(sandboxId) ?? new Map<number, Open>();
    this.bySandbox.set(sandboxId, open);
    for (const [host, o] of open) {
      const want = forwards.find((f) => f.host === host);
      if (want && want.port === o.forward.port && bindOf(want) === bindOf(o.forward) && o.server) continue;
      o.server?.stop();
      open.delete(host);
    }
    for (const f of forwards) {
      if (open.has(f.host)) continue;
      open.set(f.host, await this.listen(sandboxId, f));
    }
    return this.states(sandboxId);
  }

  /** Closes a sandbox's listeners and cuts its forwarded connections. */
  close(sandboxId: number): void {
    for (const o of this.bySandbox.get(sandboxId)?.values() ?? []) o.server?.stop();
    this.bySandbox.delete(sandboxId);
    for (const s of this.conns.get(sandboxId) ?? []) s.end();
    this.conns.delete(sandboxId);
  }

  private async listen(sandboxId: number, f: PortForward): Promise<Open> {
    const track = (c: Conn) => {
      const set = this.conns.get(sandboxId) ?? new Set<Conn>();
      this.conns.set(sandboxId, set);
      set.add(c);
    };
    const untrack = (c: Conn) => void this.conns.get(sandboxId)?.delete(c);
    const handlers = {
      data: relayEarly,
      drain: relayDrain,
      end: relayEnd,
      close: (s: Socket<Side>) => {
        untrack(s);
        relayClose(s);
      },
      error: (s: Socket<Side>) => void s.data.peer?.end(),
    };
    try {
      const server = Bun.listen<Side>({
        hostname: bindOf(f),
        port: f.host,
        allowHalfOpen: true,
        socket: {
          ...handlers,
          data: relayEarly,
          open: (client) => {
            client.data = relaySide();
            client.setNoDelay(true);
            track(client);
            this.carry(sandboxId, f.port, client, handlers, track, untrack);
          },
        },
      });
      return { forward: f, server };
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      let why =
        e.code === "EADDRINUSE" ? `${hostEndpoint(f)} is in use on this machine` : e.code === "EADDRNOTAVAIL" ? `${bindOf(f)} is not an address of this machine` : e.message;
      if (e.code === "EADDRINUSE" && bindOf(f) === "127.0.0.1" && this.who) {
        const held = await holdersText("tcp", f.host, this.who.exec, this.who.guestOf).catch(() => null);
        if (held) why = `${hostEndpoint(f)} is held by ${held}`;
      }
      this.log?.warn("port forward cannot listen", { sandbox: sandboxId, host: f.host, err: why });
      return { forward: f, server: null, error: why };
    }
  }

  /**
   * One host connection (paused: what it sends meanwhile waits in its queue), carried to `port` inside: relayed to the
   * connection the agent handed over, or, where the agent carries it as frames (its first frame says so: an empty
   * stdout), through a stand-in end that writes frames. Either side ending ends the other.
   */
  private carry(sandboxId: number, port: number, client: Socket<Side>, handlers: Parameters<typeof Bun.connect<Side>>[0]["socket"], track: (c: Conn) => void, untrack: (c: Conn) => void): void {
    const link = this.agents.get(sandboxId);
    if (!link) return void client.end();
    let handed = false;
    const d = link.dial(port, (fd) => {
      handed = true;
      if (this.spliced(client, fd, track, untrack)) return;
      // The descriptor becomes a socket of this process's loop: from here on it is relayed like any other.
      void (Bun.connect as (o: unknown) => Promise<Socket<Side>>)({ fd, allowHalfOpen: true, data: relaySide(), socket: handlers }).then(
        (up) => {
          if (client.data.closed) return void up.end();
          up.setNoDelay(true);
          track(up);
          relayJoin(client, up);
        },
        () => client.end(),
      );
    });
    void (async () => {
      const reader = d.frames.getReader();
      const dec = new FrameDecoder();
      let framed: ReturnType<typeof framedEnd> | null = null;
      try {
        for (;;) {
          if (framed) await framed.flowing();
          const { value, done } = await reader.read();
          if (done) break;
          for (const fr of dec.push(value)) {
            if (fr.type === FrameType.stdout) {
              if (!framed) {
                framed = framedEnd(d, untrack);
                track(framed);
                relayJoin(client, framed);
              }
              if (fr.payload.length > 0) relayForward(framed, client, fr.payload);
            } else if (fr.type === FrameType.exit || fr.type === FrameType.failed) {
              if (framed && fr.type === FrameType.exit) relayEnd(framed);
              else client.end();
              return;
            }
          }
        }
      } catch {
        /* the agent went away */
      }
      if (!handed) client.end();
    })();
  }

  /**
   * Relays the host's client (paused since it was accepted) and the handed-over connection `up` with splice, off this
   * thread; what the client sent meanwhile goes first. False (nothing taken) when the splice relay is absent or busy.
   */
  private spliced(client: Socket<Side>, up: number, track: (c: Conn) => void, untrack: (c: Conn) => void): boolean {
    const fd = (client as unknown as { fd?: number }).fd;
    if (!this.splice || client.data.closed || typeof fd !== "number" || fd < 0) return false;
    // From here Bun reads nothing more of the client (what it read so far is in `early`): the thread takes the rest. A
    // client that had sent nothing yet is not paused, and its first bytes would land in `early` and be lost.
    client.pause();
    const early = Buffer.concat(client.data.early);
    const pair = this.splice.start(fd, up, early, client.data.earlyEnd, (clean) => {
      untrack(cut);
      if (!clean) return void client.terminate();
      // Both FINs passed on: the client's socket here has only its EOF left to read, and an ended Bun socket closes on it
      // (closing it unread instead would reset a connection whose last bytes may still be on their way).
      client.end();
      client.resume();
    });
    if (!pair) return false; // relayJoin resumes the client
    client.data.early = [];
    client.data.earlyEnd = false;
    // What closing the sandbox's forwards ends: the pair, cut (the client socket itself stays paused, unread, in Bun).
    const cut: Conn = { data: relaySide(), write: () => 0, shutdown: () => pair.cut(), end: () => pair.cut(), pause: () => {}, resume: () => {} };
    untrack(client);
    track(cut);
    return true;
  }

  /** The guard: the forwards of a sandbox whose kind takes them (DriverCaps.portForwards) up with its guards, down with them. */
  guard(): SandboxGuard {
    return {
      name: "ports",
      start: async (ctx): Promise<GuardHandle> => {
        if (!ctx.driver.caps.portForwards) return { health: () => ({ ok: true, detail: "not used" }), stop: async () => {} };
        const id = ctx.sandbox.id;
        await this.apply(id, portsOf(ctx.sandbox.identity));
        return {
          health: () => {
            const s = this.states(id);
            const bad = s.filter((p) => p.state === "error");
            return { ok: true, detail: s.length === 0 ? "none" : `${s.filter((p) => p.state === "forwarding").map((p) => `${hostEndpoint(p)}→${p.port}`).join(", ")}${bad.length ? `; not forwarded: ${bad.map((p) => `${p.host} (${p.error})`).join(", ")}` : ""}` };
          },
          stop: async () => this.close(id),
        };
      },
    };
  }
}

/**
 * The inside end of a connection the agent carries as frames, as the relay drives it: writes go out as stdin frames
 * (the agent's connection holds what its socket cannot take yet), a FIN as stdinEnd; `pause` holds the frames loop
 * (`flowing`) until the host's client drains.
 */
function framedEnd(d: { write(b: Uint8Array): void; end(): void; close(): void }, gone: (e: RelayEnd) => void): RelayEnd & { flowing(): Promise<void> } {
  let paused = false;
  let wake: (() => void) | null = null;
  const end: RelayEnd & { flowing(): Promise<void> } = {
    data: relaySide(),
    write(b) {
      d.write(b);
      return b.length;
    },
    shutdown: () => d.end(),
    end() {
      if (end.data.closed) return;
      d.close();
      relayClose(end);
      gone(end);
      end.resume();
    },
    pause: () => void (paused = true),
    resume() {
      paused = false;
      wake?.();
      wake = null;
    },
    flowing: () => (paused && !end.data.closed ? new Promise<void>((r) => (wake = r)) : Promise.resolve()),
  };
  return end;
}
