// The DNS stub a user-account guest's queries are redirected to (nft, by its uid): 127.0.0.1:<its proxy port> over UDP, answered from its name map.
//
// A container's stub runs inside it (shims/transparent.ts); a guest shares the host's network and resolv.conf, so its
// queries to any nameserver are redirected here by the firewall, and this answers them as that sandbox's: every name
// gets the address that stands for it in the sandbox's map, nothing is ever forwarded.
import { respond } from "../../shims/dns";
import { askableName } from "../core/dns";
import type { TransparentNames } from "../core/egress-events";

export interface DnsStub {
  readonly port: number;
  close(): void;
}

/** Serves the stub on hostname:port (UDP); rejects when it cannot bind. */
export async function serveDnsStub(hostname: string, port: number, names: TransparentNames): Promise<DnsStub> {
  const addressOf = (name: string): string | null | undefined => {
    const host = askableName(name);
    return host === null ? undefined : names.addressOf(host);
  };
  const sock = await Bun.udpSocket({
    hostname,
    port,
    socket: {
      data(s, buf, rport, raddr) {
        let out: Uint8Array | null = null;
        try {
          out = respond(new Uint8Array(buf), addressOf);
        } catch {
          out = null; // a store error: no answer, the client retries
        }
        // A client gone before its answer (the kernel's port-unreachable comes back as ECONNREFUSED on the next send
        // or receive) is nobody's error: thrown here, it reached the daemon as an uncaught error, one log line each.
        try {
          if (out) s.send(out, rport, raddr);
        } catch {
          // the answer has nowhere to go
        }
      },
      error() {
        // as above, on receive
      },
    },
  });
  return { port: sock.port, close: () => sock.close() };
}
