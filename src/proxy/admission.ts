// What one sandbox may hold open at once (invariant 14): PROXY_MAX_CONNECTIONS of its connections, on every way in
// into its proxy. The next is refused before anything of it is read (a 503 that says why; a transparent one cut), and
// said (an `error` decision, audited) once a second at most. The refusals are bounded too: at most
// PROXY_MAX_CONNECTIONS are being answered at once, past that a connection is closed at once without one.
import type { Socket } from "node:net";
import type { EgressEvent, EgressSandbox } from "../core/egress-events";
import { PROXY_MAX_CONNECTIONS } from "../core/bounds";
import { cut } from "./refusal";

export class Admission {
  private readonly clients = new Set<Socket>();
  private refusing = 0;
  private refusedSince = 0;
  private toldAt = 0;

  constructor(private readonly o: { sandbox: EgressSandbox; emit: (e: EgressEvent) => void }) {}

  /** Takes the connection in (true), or refuses it (false: answered with a 503, or cut) and says so at most once a second. */
  admit(s: Socket, how: "proxy" | "transparent"): boolean {
    if (this.clients.size < PROXY_MAX_CONNECTIONS) {
      this.clients.add(s);
      s.once("close", () => this.clients.delete(s));
      return true;
    }
    this.refusedSince++;
    const message = `${PROXY_MAX_CONNECTIONS} connections of this sandbox are open at once; more are refused until some close`;
    const now = Date.now();
    if (now - this.toldAt >= 1000) {
      this.toldAt = now;
      this.o.emit({ type: "error", sandbox: this.o.sandbox, path: how, method: "CONNECT", host: "(any)", port: 0, address: null, message: `${message} (${this.refusedSince} refused)`, at: now });
      this.refusedSince = 0;
    }
    s.on("error", () => s.destroy());
    if (how === "transparent" || this.refusing >= PROXY_MAX_CONNECTIONS) {
      cut(s);
      return false;
    }
    this.refusing++;
    const body = `sbx proxy: ${message}.\n`;
    s.resume(); // read and dropped, so the close is not a reset that loses the answer
    s.end(`HTTP/1.1 503 sbx: too many connections from this sandbox\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    // A second for the client to read it and close (closing first would reset it away); a client that never does is cut.
    const t = setTimeout(() => s.destroy(), 1000);
    s.once("close", () => {
      clearTimeout(t);
      this.refusing--;
    });
    return false;
  }
}
