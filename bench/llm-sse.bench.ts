// Benchmark: a 100-chunk SSE response through the LLM key proxy handler vs straight from the (fake) provider.
import { createServer } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { report, time } from "./lib";
import { createLlmHandler } from "../src/llm/handler";
import { startFakeLlm } from "../test/support/fake-llm";

const fake = await startFakeLlm();
fake.chunks = 100;
const dir = mkdtempSync(join(tmpdir(), "sbx-bench-llm-"));
const handler = createLlmHandler({ keys: () => ({ env: { ANTHROPIC_API_KEY: "sk-ant-bench-key" } }), upstreams: { anthropic: fake.url } });
const server = createServer(handler);
await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
const addr = server.address();
const proxied = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}/llm/anthropic/v1/messages`;
const direct = `${fake.url}/v1/messages`;

async function stream(url: string): Promise<number> {
  const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ stream: true }) });
  let n = 0;
  for await (const c of r.body!) n += c.length;
  return n;
}

try {
  const a = await stream(direct);
  const b = await stream(proxied);
  if (a !== b) throw new Error(`proxied stream differs: ${b} vs ${a} bytes`);
  const viaProxy = await time(() => stream(proxied), 50, 5);
  const straight = await time(() => stream(direct), 50, 5);
  report([{ name: "100-chunk SSE via LLM proxy", unit: "ms", value: viaProxy.median, baselineName: "direct", baseline: straight.median, better: "lower" }]);
} finally {
  await new Promise<void>((r) => server.close(() => r()));
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
}
