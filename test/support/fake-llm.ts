// Test fixture: a fake LLM API on 127.0.0.1 that records what it receives and streams SSE chunk by chunk on cue.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";

export interface FakeLlm {
  url: string;
  /** Every request: method, path, headers and body. */
  requests: Array<{ method: string; path: string; headers: IncomingHttpHeaders; body: string }>;
  /** Resolve to let the server send the rest of a held stream (see `hold`). */
  release(): void;
  /** When true, `/v1/messages?stream` sends the first event, then waits for `release()`. */
  hold: boolean;
  /** Events per streamed response. */
  chunks: number;
  stop(): Promise<void>;
}

export async function startFakeLlm(): Promise<FakeLlm> {
  let releaseFn: () => void = () => undefined;
  const state: FakeLlm = {
    url: "",
    requests: [],
    hold: false,
    chunks: 5,
    release: () => releaseFn(),
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", async () => {
      state.requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body });
      if ((req.url ?? "").includes("/echo-credentials")) {
        // A gateway that shows the credential it was sent: in a header, the reason phrase, and the body plain, base64
        // and JSON-escaped as PHP writes it.
        const cred = String(req.headers["x-api-key"] ?? req.headers["x-goog-api-key"] ?? req.headers.authorization ?? "").replace(/^Bearer /, "");
        const b64 = Buffer.from(`user:${cred}`).toString("base64");
        res.writeHead(200, `OK ${b64}`, { "content-type": "application/json", "x-echo": `seen ${b64}` });
        res.end(JSON.stringify({ plain: cred, b64, php: b64.replaceAll("/", "\\/"), url: encodeURIComponent(cred) }));
        return;
      }
      const wantsStream = body.includes('"stream":true') || (req.url ?? "").includes("alt=sse");
      if (!wantsStream) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ ok: true, path: req.url }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const released = new Promise<void>((r) => (releaseFn = r));
      for (let i = 0; i < state.chunks; i++) {
        res.write(`event: content_block_delta\ndata: {"i":${i}}\n\n`);
        if (i === 0 && state.hold) await released;
      }
      res.end("event: message_stop\ndata: {}\n\n");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const addr = server.address();
  state.url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  return state;
}
