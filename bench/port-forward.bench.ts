// `sbx port`: a small HTTP request and a 100 MB download through a forwarded port (the host's 127.0.0.1 listener in the
// daemon; the sandbox's exec agent dials the server and hands the connection over on dial.sock; the daemon relays to
// it) against the same server reached directly, alternated in one run. Targets (issue 42): ≥ 0.6x throughput, ≤ 1.5x
// latency. The agent runs in its own process as in a container (it dials this machine's loopback here, where a
// container's agent dials the container's); the server too, so the client, daemon side, agent and server each have a
// process, as in real use.
// Run: flock /work/wt/bench.lock bun bench/port-forward.bench.ts [--json]   (RELAY=bun: the Bun-socket relay instead of splice)
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { report, summarize } from "./lib";

const MB = 1024 * 1024;
const SIZE = 100 * MB;
const role = process.argv[2];

if (role === "--server") {
  const { createServer: http } = await import("node:http");
  const chunk = Buffer.alloc(256 * 1024, 0x61);
  const srv = http((req, res) => {
    if (req.url === "/big") {
      res.writeHead(200, { "content-length": String(SIZE) });
      let left = SIZE;
      const pump = () => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once("drain", pump);
        }
        res.end();
      };
      return pump();
    }
    res.end("ok");
  });
  srv.listen(0, "127.0.0.1", () => console.log((srv.address() as { port: number }).port));
  await new Promise(() => {});
}

if (role === "--agent") {
  const { startExecAgent } = await import("../shims/exec-agent");
  startExecAgent({ socketPath: process.argv[3]!, baseEnv: { PATH: "/usr/bin:/bin" }, retryMs: { min: 20, max: 100 } });
  console.log("agent");
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

async function freePort(): Promise<number> {
  const s = createServer();
  const p = await new Promise<number>((r) => s.listen(0, "127.0.0.1", () => r((s.address() as { port: number }).port)));
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

/** One HTTP GET on a fresh connection; resolves with ms and the bytes of body read. */
function get(port: number, path: string): Promise<{ ms: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const s = connect({ host: "127.0.0.1", port, noDelay: true });
    s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    let bytes = 0;
    s.on("data", (d) => (bytes += d.length));
    s.on("end", () => {
      s.destroy();
      resolve({ ms: performance.now() - t, bytes });
    });
    s.on("error", reject);
  });
}

if (role === "--client") {
  // The client in its own process (a browser or curl in real use): the daemon side's relay keeps its own thread, as it
  // has in the daemon, and the direct baseline is measured from the same process.
  const [port, host] = [Number(process.argv[3]), Number(process.argv[4])];
  const lat = { direct: [] as number[], forwarded: [] as number[] };
  for (let i = -20; i < 300; i++) {
    const d = await get(port, "/");
    const f = await get(host, "/");
    if (i < 0) continue;
    lat.direct.push(d.ms);
    lat.forwarded.push(f.ms);
  }
  const rate = { direct: [] as number[], forwarded: [] as number[] };
  for (let i = -1; i < 5; i++) {
    const d = await get(port, "/big");
    const f = await get(host, "/big");
    if (d.bytes < SIZE || f.bytes < SIZE) throw new Error(`short download: ${d.bytes} / ${f.bytes}`);
    if (i < 0) continue;
    rate.direct.push(SIZE / MB / (d.ms / 1000));
    rate.forwarded.push(SIZE / MB / (f.ms / 1000));
  }
  console.log(JSON.stringify({ lat, rate }));
  process.exit(0);
}

const children: ReturnType<typeof Bun.spawn>[] = [];
const root = mkdtempSync(join(tmpdir(), "sbx-port-bench-"));
try {
  const { Store } = await import("../src/store/store");
  const { ExecAgents, execAgentGuard, AGENT_SOCKET } = await import("../src/daemon/exec-agents");
  const { PortForwards } = await import("../src/daemon/port-forwards");
  const { guardContext } = await import("../test/support/guard-context");
  const server = Bun.spawn([process.execPath, import.meta.path, "--server"], { stdout: "pipe", stderr: "inherit" });
  children.push(server);
  const port = Number(await firstLine(server as never));
  const store = new Store(":memory:");
  const sandbox = store.createSandbox({ name: "bench", repo: "/r", backend: "docker" });
  const dir = join(root, "sb");
  mkdirSync(dir, { mode: 0o700 });
  const agents = new ExecAgents();
  const handle = await execAgentGuard(agents).start(guardContext({ store, sandbox, dir, specDir: root, home: "/h" }));
  const agent = Bun.spawn([process.execPath, import.meta.path, "--agent", join(dir, AGENT_SOCKET)], { stdout: "pipe", stderr: "inherit" });
  children.push(agent);
  await firstLine(agent as never);
  if (!(await agents.wait(sandbox.id, 5000))) throw new Error("the agent did not connect");
  // RELAY=bun: the relay in Bun sockets (the fallback where splice cannot be used), to compare beside the splice relay.
  const forwards = new PortForwards(agents, undefined, undefined, process.env.RELAY === "bun" ? null : undefined);
  const host = await freePort();
  await forwards.apply(sandbox.id, [{ port, host }]);

  const client = Bun.spawn([process.execPath, import.meta.path, "--client", String(port), String(host)], { stdout: "pipe", stderr: "inherit" });
  children.push(client);
  const [out, code] = await Promise.all([new Response(client.stdout).text(), client.exited]);
  if (code !== 0) throw new Error(`the client exited ${code}`);
  const { lat, rate } = JSON.parse(out.trim().split("\n").pop()!) as { lat: { direct: number[]; forwarded: number[] }; rate: { direct: number[]; forwarded: number[] } };
  report([
    { name: "small HTTP request p50 through `sbx port` (host listener → handed-over connection → server)", unit: "ms", value: summarize(lat.forwarded).median, baselineName: "direct", baseline: summarize(lat.direct).median, better: "lower" },
    { name: "100 MB download through `sbx port`", unit: "MB/s", value: summarize(rate.forwarded).median, baselineName: "direct", baseline: summarize(rate.direct).median, better: "higher" },
  ]);
  forwards.close(sandbox.id);
  await handle.stop();
  store.close();
} finally {
  for (const c of children) c.kill();
  await Promise.all(children.map((c) => c.exited));
  rmSync(root, { recursive: true, force: true });
}
