// Origin-form requests, addressed to the proxy itself: `/health` and `/sbx/names|transparent` are answered by the proxy
// (sbx-endpoints.ts); the rest (`/llm/…`, `/sbx/egress…`) by the daemon's origin handler, or refused without one.
//
// The origin handler is a node:http handler (the LLM key proxy streams a provider's events through it; the egress desk
// reads bodies and holds long polls), and other parts of sbx own it. It runs in this process behind the proxy's reader
// as a server runs behind a proxy: each request is read strictly by the connection, written again by http1.ts onto an
// in-memory connection that node:http serves (node:stream's duplexPair, pooled like a server's), and the answer read
// back and written to the client like any other. So node:http never owns a client's connection: its leniency (it
// takes HTTP/0.9 and HTTP/2.0 request lines on a socket it did not accept) reaches nothing, and whatever follows an
// origin-form request on a connection is read by the proxy like the rest.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { duplexPair } from "node:stream";
import type { OriginForwarder } from "./connection";
import type { Destination } from "./forward";
import type { Endpoint, SbxEndpoints } from "./sbx-endpoints";
import { UpstreamPool } from "./upstream";

export type OriginHandler = (req: IncomingMessage, res: ServerResponse) => void;

export type OriginRoute =
  | { kind: "own"; endpoint: Endpoint }
  | { kind: "handler"; destination: Destination }
  | { kind: "forwarder"; forwarder: OriginForwarder }
  | { kind: "none"; message: string };

/** Where the in-memory connections to the handler are pooled (one key: there is one handler). */
const HANDLER = { address: "origin", port: 0 };

export class Origin {
  private readonly pool: UpstreamPool | null;

  constructor(
    private readonly endpoints: SbxEndpoints,
    handler: OriginHandler | undefined,
    connectTimeoutMs: number,
    /** Origin-form requests sent on by the proxy's own reader and pool (the LLM routes), before the handler's. */
    private readonly forwarder: OriginForwarder | null = null,
  ) {
    this.pool = handler ? new UpstreamPool(connectTimeoutMs, undefined, handlerConnection(handler)) : null;
  }

  /** Who answers an origin-form request. */
  route(method: string, target: string): OriginRoute {
    const endpoint = this.endpoints.match(method, target);
    if (endpoint) return { kind: "own", endpoint };
    if (this.forwarder?.handles(target)) return { kind: "forwarder", forwarder: this.forwarder };
    if (!this.pool) return { kind: "none", message: "sbx proxy: send requests through it as a proxy (absolute URI or CONNECT), not to it.\n" };
    return {
      kind: "handler",
      destination: {
        pool: this.pool,
        ...HANDLER,
        target,
        // The client's own Host goes on: the handler is the proxy's, not a server the allowlist judged.
        host: null,
        done: () => undefined,
        failure: (why) => `the proxy's own handler failed: ${why}`,
      },
    };
  }

  /** Ends every connection to the handler (its requests under way are cut). */
  close(): void {
    this.pool?.close();
    this.forwarder?.close?.();
  }
}

/** A new in-memory connection served by `handler` (node:http's parser on one end, the pool on the other). */
function handlerConnection(handler: OriginHandler): () => Socket {
  const server = createServer(handler);
  return () => {
    const [ours, theirs] = duplexPair();
    // Either end's close is the other's: a client gone cuts the handler's request (its `close`), and back.
    ours.once("close", () => theirs.destroy());
    theirs.once("close", () => ours.destroy());
    server.emit("connection", theirs);
    // The pool writes the request once its connection says it is connected.
    queueMicrotask(() => ours.emit("connect"));
    return ours as unknown as Socket;
  };
}
