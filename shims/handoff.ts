// The in-sandbox forwarder's listener handoff: make 127.0.0.1:<port>, give the listening socket to the daemon's proxy, relay only while it is away.
//
// The proxy accepts the sandbox's connections on the handed-over socket itself, so each byte crosses one relay (the
// proxy) instead of two (forwarder, then proxy). While no daemon holds the listener (before the first handoff, after
// the daemon went away) the plain relay accepts on a duplicate of it, which fails closed when the proxy socket is
// gone. The handoff connection stays open while the daemon holds the listener: its end is how the forwarder learns
// the daemon went away. Like the exec agent, the forwarder connects OUT to a socket the daemon listens on.
import type { Socket } from "bun";
import type { FdPassing } from "./fd-pass";
import { startTcpRelay, type TcpRelay } from "./relay";

export interface HandoffOptions {
  lib: FdPassing;
  /** The forwarder's own listening socket (from `lib.listenLoopback`). */
  listener: { fd: number; port: number };
  /** The daemon's handoff socket (listen.sock beside the proxy socket). */
  handoffPath: string;
  /** The proxy socket the fallback relay connects to. */
  socketPath: string;
  log: (line: string) => void;
  /** Reconnect delay bounds while the daemon is away. */
  retryMs?: { min: number; max: number };
  /**
   * Whether the forwarder relays the listener's connections to the proxy socket while the daemon does not hold it
   * (default true). The transparent listeners do not: their connections carry no name the proxy socket could be
   * told, so they wait in the backlog for the daemon instead (fail closed).
   */
  relay?: boolean;
}

export interface Handoff {
  /** Whether the daemon holds the listener now (the relay accepts nothing). */
  held(): boolean;
  stop(): void;
}

export function startHandoff(o: HandoffOptions): Handoff {
  const retry = o.retryMs ?? { min: 50, max: 2000 };
  let delay = retry.min;
  let relay: TcpRelay | null = null;
  let held = false;
  let stopped = false;
  let current: Socket<undefined> | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;

  const relays = o.relay ?? true;
  const relayOn = () => {
    if (relays && !relay && !stopped) relay = startTcpRelay({ port: o.listener.port, fd: o.lib.dup(o.listener.fd), socketPath: o.socketPath });
  };
  const relayOff = () => {
    relay?.stopAccepting(); // connections it already carries finish on their own
    relay = null;
  };
  const later = () => {
    if (stopped) return;
    timer = setTimeout(attempt, delay);
    delay = Math.min(delay * 2, retry.max);
  };

  function attempt(): void {
    timer = null;
    if (stopped) return;
    let answer = "";
    let refused = false;
    let mine = false;
    Bun.connect<undefined>({
      unix: o.handoffPath,
      socket: {
        open(s) {
          current = s;
          if (!o.lib.sendFd((s as unknown as { fd: number }).fd, o.listener.fd)) s.end();
        },
        data(s, d) {
          answer += Buffer.from(d).toString("latin1");
          if (!answer.includes("\n")) return;
          const line = answer.slice(0, answer.indexOf("\n"));
          if (line === "ok" && !mine) {
            mine = true;
            held = true;
            delay = retry.min;
            relayOff();
          } else if (line.startsWith("refused ")) {
            refused = true;
            o.log(`sbx forwarder: the daemon refused the listener (${line.slice(8)}); relaying instead`);
            s.end();
          }
        },
        close() {
          current = null;
          if (mine) {
            held = false;
            relayOn();
          }
          if (!refused) later();
        },
        error() {
          /* close follows */
        },
      },
    }).catch(() => later());
  }

  relayOn();
  attempt();
  return {
    held: () => held,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      current?.end();
      relay?.close();
      relay = null;
    },
  };
}
