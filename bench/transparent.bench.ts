// Transparent path benchmark: the same transfers and requests through the transparent path (a connection to the
// address that stands for a name, judged as CONNECT name:port or plain HTTP), through the proxy-variable path (CONNECT
// and absolute-form requests on the proxy's listener) and direct, in one run; and the DNS stub's answer time.
//
// Issue 25's targets: the transparent path within 10% of the proxy-variable path (throughput, added p50 latency); the
// stub answers in ≤ 1 ms p50. The proxy runs in its own process, as in the daemon; the servers in another; the client
// is this process. Both of the proxy's listeners are made here as the forwarder makes them inside a container
// (127.0.0.1:<port> for the proxy path, 0.0.0.0:<port> for the transparent one) and handed to the proxy.
//
// Run: bun bench/transparent.bench.ts [--json] (SBX_BENCH_ROUNDS=7).
import { connect, type Socket } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { report, summarize } from "./lib";
import { download as transferDown, lineReader, MB, serveTransfers, upload as transferUp } from "./transfer";

const SIZE = 100 * MB;
const ROUNDS = Number(process.env.SBX_BENCH_ROUNDS ?? 7);
const LATENCY_RUNS = 300;
const DNS_RUNS = 2000;
const NAME = "site.bench";
const NAME_ADDRESS = "127.77.0.2";
const role = process.argv[2];

if (role === "--servers") {
  await serveTransfers(SIZE);
  await new Promise(() => {});
}

if (role === "--proxy") {
  const { startEgressProxy } = await import("../src/proxy/egress-proxy");
  const { serveDnsStub } = await import("../src/proxy/dns-stub");
  const { fdPassing } = await import("../shims/fd-pass");
  const [socketPath, down, up, web] = process.argv.slice(3).map((x, i) => (i === 0 ? x : Number(x))) as [string, number, number, number];
  const { Store } = await import("../src/store/store");
  const { NameMap } = await import("../src/policy/name-map");
  // The daemon's own name map, in a store of its own: the first name given out is NAME_ADDRESS.
  const store = new Store(join(socketPath, "..", "bench.db"));
  const names = new NameMap(store, store.createSandbox({ name: "bench", repo: "/nonexistent", backend: "docker" }).id);
  if (names.addressOf(NAME) !== NAME_ADDRESS) throw new Error("the first name given out is not 127.77.0.2");
  const proxy = await startEgressProxy({
    // The proxy's own cost, unpaced (a sandbox's proxy paces its requests: test/integration/proxy/bounded.test.ts).
    pace: null,
    socketPath,
    sandbox: { id: 1, name: "bench" },
    policy: () => ({ sandbox: [`${NAME}:${down}`, `${NAME}:${up}`, `${NAME}:${web}`], global: [], published: [down, up, web].map((p) => `127.0.0.1:${p}`) }),
    resolve: async () => ["127.0.0.1"],
    onDecision: () => {},
    names,
    transparentHttpPorts: [web],
  });
  const lib = fdPassing();
  if (!lib) throw new Error("no fd passing here");
  const plain = lib.listenLoopback(0);
  proxy.serveListener(plain.fd);
  // Which server a transparent connection stands for: by the port the client dialled on the one listener, each of
  // three listeners standing for one server's port (inside a container they are 443/80 and the name's port is the same).
  const t = [lib.listenAll(0), lib.listenAll(0), lib.listenAll(0)];
  t.forEach((l, i) => proxy.serveTransparent(l.fd, (s) => (s.localAddress ? { address: s.localAddress, port: [down, up, web][i]! } : null)));
  const stub = await serveDnsStub("127.0.0.1", 0, names);
  console.log(JSON.stringify({ proxy: plain.port, tDown: t[0]!.port, tUp: t[1]!.port, tWeb: t[2]!.port, dns: stub.port }));
  await new Promise(() => {});
}

/** A connection: direct to 127.0.0.1:port, a CONNECT through the proxy's listener, or to the name's address (transparent). */
function open(kind: "direct" | "proxy" | "transparent", port: number, via: number): Promise<{ s: Socket; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: kind === "transparent" ? NAME_ADDRESS : "127.0.0.1", port: kind === "direct" ? port : via, allowHalfOpen: true, noDelay: true });
    s.on("error", reject);
    if (kind !== "proxy") return void s.once("connect", () => resolve({ s, rest: Buffer.alloc(0) }));
    s.write(`CONNECT ${NAME}:${port} HTTP/1.1\r\nHost: ${NAME}:${port}\r\n\r\n`);
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const i = buf.indexOf("\r\n\r\n");
      if (i < 0) return;
      s.off("data", onData);
      if (!buf.subarray(0, 12).toString().includes("200")) return reject(new Error(buf.toString()));
      s.pause();
      resolve({ s, rest: buf.subarray(i + 4) });
    };
    s.on("data", onData);
  });
}

const download = (kind: "direct" | "proxy" | "transparent", port: number, via: number) => transferDown(() => open(kind, port, via), SIZE, kind);
const upload = (kind: "direct" | "proxy" | "transparent", port: number, via: number) => transferUp(() => open(kind, port, via), SIZE, kind);

/** One small HTTP request on a fresh connection: origin-form direct or transparent, absolute-form through the proxy. */
function small(kind: "direct" | "proxy" | "transparent", port: number, via: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const s = connect({ host: kind === "transparent" ? NAME_ADDRESS : "127.0.0.1", port: kind === "direct" ? port : via, noDelay: true });
    const target = kind === "proxy" ? `http://${NAME}:${port}/` : "/";
    s.write(`GET ${target} HTTP/1.1\r\nHost: ${kind === "direct" ? "127.0.0.1" : NAME}:${port}\r\nConnection: close\r\n\r\n`);
    let out = "";
    s.on("data", (d: Buffer) => (out += d));
    s.on("end", () => {
      const ms = performance.now() - t;
      s.destroy();
      if (!out.startsWith("HTTP/1.1 200")) return reject(new Error(`${kind}: ${out.slice(0, 200)}`));
      resolve(ms);
    });
    s.on("error", reject);
  });
}

/** A DNS query for `name` (A), as a stub resolver sends it. */
function query(id: number, name: string): Uint8Array {
  const labels = name.split(".").flatMap((l) => [l.length, ...[...l].map((c) => c.charCodeAt(0))]);
  return Uint8Array.from([id >> 8, id & 0xff, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, ...labels, 0, 0, 1, 0, 1]);
}

const firstLine = (stream: ReadableStream<Uint8Array>) => lineReader(stream)();

if (role === undefined || role === "--json") {
  const dir = mkdtempSync(join(tmpdir(), "sbxb-tp-"));
  const children: ReturnType<typeof Bun.spawn>[] = [];
  try {
    const servers = Bun.spawn(["bun", import.meta.path, "--servers"], { stdout: "pipe", stderr: "inherit" });
    children.push(servers);
    const ports = JSON.parse(await firstLine(servers.stdout as ReadableStream<Uint8Array>)) as { down: number; up: number; web: number };
    const proxy = Bun.spawn(["bun", import.meta.path, "--proxy", join(dir, "proxy.sock"), String(ports.down), String(ports.up), String(ports.web)], { stdout: "pipe", stderr: "inherit" });
    children.push(proxy);
    const l = JSON.parse(await firstLine(proxy.stdout as ReadableStream<Uint8Array>)) as { proxy: number; tDown: number; tUp: number; tWeb: number; dns: number };

    type Kind = "direct" | "proxy" | "transparent";
    const kinds: Kind[] = ["direct", "proxy", "transparent"];
    const via = (k: Kind, which: "down" | "up" | "web") => (k === "proxy" ? l.proxy : which === "down" ? l.tDown : which === "up" ? l.tUp : l.tWeb);
    const rate: Record<string, number[]> = {};
    for (let round = 0; round <= ROUNDS; round++) {
      for (const k of kinds) {
        const d = await download(k, ports.down, via(k, "down"));
        const u = await upload(k, ports.up, via(k, "up"));
        if (round === 0) continue; // warm-up
        (rate[`down ${k}`] ??= []).push(d);
        (rate[`up ${k}`] ??= []).push(u);
      }
    }
    const lat: Record<Kind, number[]> = { direct: [], proxy: [], transparent: [] };
    for (let i = -10; i < LATENCY_RUNS; i++) {
      for (const k of kinds) {
        const ms = await small(k, ports.web, via(k, "web"));
        if (i >= 0) lat[k].push(ms);
      }
    }
    // The DNS stub: the same name again (the common case), and a new name each time (a map write each).
    let answered: (() => void) | null = null;
    const sock = await Bun.udpSocket({ hostname: "127.0.0.1", port: 0, socket: { data: () => answered?.() } });
    const ask = (name: string, id: number) =>
      new Promise<number>((resolve) => {
        const t = performance.now();
        answered = () => resolve(performance.now() - t);
        sock.send(query(id, name), l.dns, "127.0.0.1");
      });
    const same: number[] = [];
    const fresh: number[] = [];
    for (let i = -50; i < DNS_RUNS; i++) {
      const a = await ask(NAME, i & 0xffff);
      const b = await ask(`n${i + 100}.bench`, (i + 7) & 0xffff);
      if (i >= 0) {
        same.push(a);
        fresh.push(b);
      }
    }
    sock.close();
    const med = (k: string) => summarize(rate[k]!).median;
    const p50 = (xs: number[]) => summarize(xs).median;
    const added = (k: Kind) => p50(lat[k]) - p50(lat.direct);
    report([
      { name: "100 MB download, transparent path", unit: "MB/s", value: med("down transparent"), baselineName: "proxy-variable path", baseline: med("down proxy"), better: "higher", target: 0.9 },
      { name: "100 MB upload, transparent path", unit: "MB/s", value: med("up transparent"), baselineName: "proxy-variable path", baseline: med("up proxy"), better: "higher", target: 0.9 },
      { name: "100 MB download, proxy-variable path", unit: "MB/s", value: med("down proxy"), baselineName: "direct loopback", baseline: med("down direct"), better: "higher", target: 0.5 },
      { name: "100 MB upload, proxy-variable path", unit: "MB/s", value: med("up proxy"), baselineName: "direct loopback", baseline: med("up direct"), better: "higher", target: 0.5 },
      { name: "small HTTP request p50, transparent path", unit: "ms", value: p50(lat.transparent), baselineName: "proxy-variable path", baseline: p50(lat.proxy), better: "lower", target: 1.1 },
      { name: "added p50 latency, transparent path (over direct)", unit: "ms", value: added("transparent"), baselineName: "proxy-variable path's", baseline: added("proxy"), better: "lower", target: 1.1 },
      { name: "DNS stub answer p50, a name asked before", unit: "ms", value: p50(same), baselineName: "the 1 ms target", baseline: 1, better: "lower", target: 1 },
      { name: "DNS stub answer p50, a new name (given out and stored)", unit: "ms", value: p50(fresh), baselineName: "the 1 ms target", baseline: 1, better: "lower", target: 1 },
    ]);
  } finally {
    for (const c of children) c.kill();
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0);
}
