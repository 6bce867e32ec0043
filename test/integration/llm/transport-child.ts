// A daemon's LLM handler in a process of its own (its environment is the test's to set): one call through it to the
// provider given, the answer on stdout. Run by transport.test.ts: bun transport-child.ts PROVIDER_URL TRANSPORT KEY
import { request } from "node:http";
import { createLlmHandler } from "../../../src/llm/handler";
import { llmServer } from "../../support/llm-server";

const [upstream, , key] = process.argv.slice(2);
const server = llmServer(createLlmHandler({ keys: () => ({ env: { ANTHROPIC_API_KEY: key! } }), upstreams: { anthropic: upstream! } }));
await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
const port = (server.address() as { port: number }).port;
const body = await new Promise<string>((resolve, reject) => {
  const q = request({ host: "127.0.0.1", port, method: "POST", path: "/llm/anthropic/v1/messages", headers: { "content-type": "application/json" } }, (res) => {
    let t = "";
    res.on("data", (c: Buffer) => (t += c.toString()));
    res.on("end", () => resolve(t));
  });
  q.on("error", reject);
  q.end('{"model":"claude-sonnet-4-5"}');
});
console.log(body);
process.exit(0);
