// LLM streaming: a 500-event SSE answer (Anthropic's shape: message_start, content_block_delta…, message_delta with
// usage, message_stop) through the LLM proxy as a sandbox reaches it (the egress proxy's socket → its origin handler →
// the LLM handler with a budget's meter → the provider) beside the same provider reached directly, alternated in one
// run. The whole answer's relay time (the provider writes every event at once: the relay's cost per event, nothing
// else); and the time to the first event's bytes when the provider sends it alone and thinks 10 ms before the rest.
// The LLM routes are served by the proxy's own reader and pool (llm/handler.ts as its origin forwarder), so there is no
// "handler alone" any more. Also printed: a raw byte relay as one more process hop (the floor of any proxy in between).
//
// The provider and the proxy run in their own processes, as in real use (provider elsewhere, proxy in the daemon).
// Run: bun bench/llm-sse.bench.ts [--json] (SBX_BENCH_RUNS=60)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { report, summarize } from "./lib";

const CHUNKS = 500;
const RUNS = Number(process.env.SBX_BENCH_RUNS ?? 60);
const role = process.argv[2];

if (role === "--provider") {
  // A provider's stream: the events as an SDK receives them, written as fast as the socket takes them.
  const { createServer } = await import("node:http");
  const start = `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":1200,"output_tokens":1}}}\n\n`;
  const delta = (i: number) => `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word${i} "}}\n\n`;
  const end = `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":${CHUNKS}}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n`;
  const srv = createServer((req, res) => {
    req.resume();
    req.on("end", async () => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write(start);
      // ?think: the model takes a moment before its first token, as a real one does, so the first event travels alone.
      // (Asked as a query parameter: the LLM handler sends the query on as URLSearchParams writes it, `?think=`.)
      if (new URL(req.url ?? "/", "http://provider").searchParams.has("think")) await Bun.sleep(10);
      for (let i = 0; i < CHUNKS; i++) res.write(delta(i));
      res.end(end);
    });
  });
  srv.listen(0, "127.0.0.1", () => console.log((srv.address() as { port: number }).port));
  await new Promise(() => {});
}

if (role === "--proxy") {
  const { createServer: createNet, connect } = await import("node:net");
  const { startEgressProxy } = await import("../src/proxy/egress-proxy");
  const { createLlmHandler } = await import("../src/llm/handler");
  const [socketPath, upstream] = process.argv.slice(3);
  // As the daemon's: a budget on every sandbox, so each answer passes its meter (llm/meter.ts); nothing is refused.
  const budget = { admit: () => null, record: () => undefined };
  const llm = createLlmHandler({ keys: () => ({ env: { ANTHROPIC_API_KEY: "sk-ant-bench-key" } }), upstreams: { anthropic: upstream! }, budget });
  await startEgressProxy({ pace: null, socketPath: socketPath!, sandbox: { id: 1, name: "bench" }, policy: () => ({ sandbox: [], global: [] }), resolve: async () => [], onDecision: () => {}, originHandler: llm.local, originForwarder: llm });
  // The floor: bytes relayed as they come, one more process hop, no HTTP read at all.
  const u = new URL(upstream!);
  const raw = createNet((s) => {
    const t = connect({ host: u.hostname, port: Number(u.port), noDelay: true });
    s.setNoDelay(true);
    s.pipe(t).pipe(s);
    s.on("error", () => t.destroy());
    t.on("error", () => s.destroy());
  });
  raw.listen(0, "127.0.0.1", () => console.log((raw.address() as { port: number }).port));
  await new Promise(() => {});
}

async function firstLine(p: { stdout: ReadableStream<Uint8Array> }): Promise<string> {
  const r = p.stdout.getReader();
  let t = "";
  while (!t.includes("\n")) {
    const { value, done } = await r.read();
    if (done) break;
    t += new TextDecoder().decode(value);
  }
  r.releaseLock();
  return t.trim();
}

/** One streamed call as an SDK makes it: ms to the first body bytes, ms to the end, bytes. */
async function stream(path: string, unix?: string): Promise<{ first: number; total: number; bytes: number }> {
  const t = performance.now();
  const r = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "sbx-placeholder" },
    body: JSON.stringify({ model: "claude-sonnet-4-5", stream: true, max_tokens: 1024, messages: [{ role: "user", content: "hi" }] }),
    ...(unix ? { unix } : {}),
  });
  let first = 0;
  let bytes = 0;
  for await (const c of r.body!) {
    if (bytes === 0) first = performance.now() - t;
    bytes += c.length;
  }
  return { first, total: performance.now() - t, bytes };
}

const children: ReturnType<typeof Bun.spawn>[] = [];
const dir = mkdtempSync(join(tmpdir(), "sbx-bench-llm-"));
try {
  const provider = Bun.spawn([process.execPath, import.meta.path, "--provider"], { stdout: "pipe", stderr: "inherit" });
  children.push(provider);
  const upstream = `http://127.0.0.1:${await firstLine(provider as never)}`;
  const sock = join(dir, "proxy.sock");
  const proxy = Bun.spawn([process.execPath, import.meta.path, "--proxy", sock, upstream], { stdout: "pipe", stderr: "inherit" });
  children.push(proxy);
  const alonePort = await firstLine(proxy as never);
  const paths = {
    direct: (q = "") => stream(`${upstream}/v1/messages${q}`),
    proxy: (q = "") => stream(`http://sbx/llm/anthropic/v1/messages${q}`, sock),
    relay: (q = "") => stream(`http://127.0.0.1:${alonePort}/v1/messages${q}`),
  };
  const want = (await paths.direct()).bytes;
  for (const [name, f] of Object.entries(paths)) {
    const b = (await f()).bytes;
    if (b !== want) throw new Error(`${name}: ${b} bytes, direct ${want}`);
  }
  const xs = { direct: [] as { first: number; total: number }[], proxy: [] as { first: number; total: number }[], relay: [] as { first: number; total: number }[] };
  for (let i = -10; i < RUNS; i++) {
    // Alternated, so load that comes and goes on a shared machine weighs on each alike.
    for (const k of ["direct", "proxy", "relay"] as const) {
      const s = await paths[k]();
      const f = await paths[k]("?think");
      if (i >= 0) xs[k].push({ first: f.first, total: s.total });
    }
  }
  const med = (k: keyof typeof xs, f: "first" | "total") => summarize(xs[k].map((s) => s[f])).median;
  report([
    { name: `SSE: first event through the LLM proxy (proxy socket → origin → handler)`, unit: "ms", value: med("proxy", "first"), baselineName: "direct", baseline: med("direct", "first"), better: "lower" },
    { name: `${CHUNKS}-event SSE: whole answer through the LLM proxy`, unit: "ms", value: med("proxy", "total"), baselineName: "direct", baseline: med("direct", "total"), better: "lower", target: 1.5 },
    { name: `${CHUNKS}-event SSE: whole answer through a raw byte relay (the floor)`, unit: "ms", value: med("relay", "total"), baselineName: "direct", baseline: med("direct", "total"), better: "lower" },
  ]);
  if (!process.argv.includes("--json")) console.log(`added to the first event: ${(med("proxy", "first") - med("direct", "first")).toFixed(2)} ms (target ≤ +1 ms); raw relay ${(med("relay", "first") - med("direct", "first")).toFixed(2)} ms`);
} finally {
  for (const c of children) c.kill();
  await Promise.all(children.map((c) => c.exited));
  rmSync(dir, { recursive: true, force: true });
}
