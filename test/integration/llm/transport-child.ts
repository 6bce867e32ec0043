// A daemon's LLM handler in a process of its own (its environment is the test's to set): one call through it to the
// provider given, the answer on stdout. Run by transport.test.ts: bun transport-child.ts PROVIDER_URL "its own agents"|"agents given" KEY
import { Agent as HttpAgent, createServer, request } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { createLlmHandler } from "../../../src/llm/handler";

const [upstream, transport, key] = process.argv.slice(2);
const agents = transport === "agents given" ? { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) } : undefined;
const server = createServer(createLlmHandler({ keys: () => ({ env: { ANTHROPIC_API_KEY: key! } }), upstreams: { anthropic: upstream! }, ...(agents ? { agents } : {}) }));
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
