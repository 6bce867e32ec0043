// `sbx port`: the own loopback ports of a sandbox whose kind takes forwards (a container) reachable from the host at 127.0.0.1:<host>. The container has no
// network, so each connection the host accepts is carried by the sandbox's exec agent, which dials the port inside
// (its `dial` session). Listeners bind 127.0.0.1 (another address only where the forward names one: the person asked),
// exist while the sandbox's guards are up, and follow the ports its identity holds (applied again when `sbx port`
// changes them). A port the host cannot bind is said, not fatal.
import { createServer, type Server, type Socket } from "node:net";
import { FrameDecoder, FrameType } from "../../shims/exec-frames";
import { bindOf, hostEndpoint, portsOf, type PortForward, type PortState } from "../core/ports";
import type { GuardHandle, SandboxGuard } from "../guards/guards";
import type { Logger } from "../sys/log";
import type { Exec } from "../sys/exec";
import { holdersText } from "../sys/port-holders";
import type { ExecAgents } from "./exec-agents";

interface Open {
  forward: PortForward;
  server: Server | null;
  error?: string;
}

export class PortForwards {
  private readonly bySandbox = new Map<number, Map<number, Open>>();
  private readonly conns = new Map<number, Set<Socket>>();

  /**
   * `who`: what says who holds a port a forward cannot bind (a forward's port is the person's choice, so nothing that
   * holds it is ended, not even a sandbox's guest whose own server took it: the refusal names it).
   */
  constructor(
    private readonly agents: ExecAgents,
    private readonly log?: Logger,
    private readonly who?: { exec: Exec; guestOf?: (uid: number) => Promise<string | null> },
  ) {}

  /** What a sandbox forwards now (empty when its guards are down). */
  states(sandboxId: number): PortState[] {
    return [...(this.bySandbox.get(sandboxId)?.values() ?? [])].map((o) => ({ ...o.forward, state: o.server ? "forwarding" : "error", ...(o.error ? { error: o.error } : {}) }));
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
      o.server?.close();
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
    for (const o of this.bySandbox.get(sandboxId)?.values() ?? []) o.server?.close();
    this.bySandbox.delete(sandboxId);
    for (const s of this.conns.get(sandboxId) ?? []) s.destroy();
    this.conns.delete(sandboxId);
  }

  private listen(sandboxId: number, f: PortForward): Promise<Open> {
    return new Promise((resolve) => {
      const server = createServer({ allowHalfOpen: true }, (sock) => this.carry(sandboxId, f.port, sock));
      server.once("error", async (e: NodeJS.ErrnoException) => {
        let why =
          e.code === "EADDRINUSE" ? `${hostEndpoint(f)} is in use on this machine` : e.code === "EADDRNOTAVAIL" ? `${bindOf(f)} is not an address of this machine` : e.message;
        if (e.code === "EADDRINUSE" && bindOf(f) === "127.0.0.1" && this.who) {
          const held = await holdersText("tcp", f.host, this.who.exec, this.who.guestOf).catch(() => null);
          if (held) why = `${hostEndpoint(f)} is held by ${held}`;
        }
        this.log?.warn("port forward cannot listen", { sandbox: sandboxId, host: f.host, err: why });
        resolve({ forward: f, server: null, error: why });
      });
      server.listen(f.host, bindOf(f), () => resolve({ forward: f, server }));
    });
  }

  /** One host connection, carried to `port` inside through the agent; either side ending ends the other. */
  private carry(sandboxId: number, port: number, sock: Socket): void {
    const link = this.agents.get(sandboxId);
    if (!link) return void sock.destroy();
    const set = this.conns.get(sandboxId) ?? new Set<Socket>();
    this.conns.set(sandboxId, set);
    set.add(sock);
    sock.setNoDelay(true);
    const d = link.dial(port);
    sock.on("data", (b: Buffer) => d.write(new Uint8Array(b.buffer, b.byteOffset, b.byteLength)));
    sock.on("end", () => d.end());
    sock.on("error", () => sock.destroy());
    sock.on("close", () => {
      set.delete(sock);
      d.close();
    });
    void (async () => {
      const reader = d.frames.getReader();
      const dec = new FrameDecoder();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const fr of dec.push(value)) {
            if (fr.type === FrameType.stdout) {
              if (!sock.write(fr.payload)) await new Promise<void>((r) => sock.once("drain", () => r()));
            } else if (fr.type === FrameType.exit || fr.type === FrameType.failed) {
              sock.end();
              return;
            }
          }
        }
      } catch {
        /* the agent went away */
      }
      sock.end();
    })();
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
