// Egress path benchmark: 100 MB down and up through the sandbox's path (127.0.0.1:<port> → proxy → loopback server) vs direct loopback, plus added p50 latency.
//
// The full path is what a Docker sandbox has: the forwarder hands its listener to the proxy, which accepts on it and
// relays once. Also measured: the forwarder's relay (its fallback while no daemon holds the listener: two relays) and
// the proxy socket alone.
//
// When squid is installed (Debian's `squid`), it runs beside as the other baseline: a forward proxy on 127.0.0.1 as
// glovebox runs it (an allow-list proxy, no cache), through which the same transfers and requests go.
//
// Small-request latency is measured twice: over the first LATENCY_RUNS rounds of fresh processes, and again once
// STEADY_AFTER more rounds have run (the proxy and the loopback web server are Bun: their first requests run while the
// JIT compiles them; a daemon is a long-running process). Both are printed, squid's beside each.
//
// Run: bun bench/proxy.bench.ts [--json] (SBX_BENCH_ROUNDS=7). Servers, proxy and forwarder each run in their own
// process (as in real use: server elsewhere, proxy in the daemon, forwarder in the sandbox); the client is this process.
// Paths are measured in interleaved rounds so load from other work falls on each alike; the load average and each
// process's CPU per 100 MB are printed, since on a busy 2-core machine CPU per byte decides the ratio.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { report, summarize } from "./lib";
import { download as transferDown, lineReader, MB, serveTransfers, upload as transferUp } from "./transfer";

const SIZE = 100 * MB;
const ROUNDS = Number(process.env.SBX_BENCH_ROUNDS ?? 7);
const LATENCY_RUNS = 300;
/**
 * Rounds run (unmeasured) between the first latency sample and the second. The first is of fresh processes: the loopback
 * web server (the baseline's own server, Bun's node:http) and the proxy are still compiling their code, and the first
 * few hundred requests measure that as much as the path. The second is what a long-running daemon and server see.
 */
const STEADY_AFTER = 1000;

const role = process.argv[2];

// ── child roles ──────────────────────────────────────────────────────────

if (role === "--servers") {
  await serveTransfers(SIZE);
  await new Promise(() => {});
}

if (role === "--proxy") {
  const { startEgressProxy } = await import("../src/proxy/egress-proxy");
  const { serveListenerHandoff } = await import("../src/proxy/listener-handoff");
  const { fdPassing } = await import("../shims/fd-pass");
  const [socketPath, ...ports] = process.argv.slice(3);
  const proxy = await startEgressProxy({
    // The proxy's own cost, unpaced (a sandbox's proxy paces its requests: test/integration/proxy/bounded.test.ts).
    pace: null,
    socketPath: socketPath!,
    sandbox: { id: 1, name: "bench" },
    // The loopback servers stand for the internet here; to the proxy they are published services of the host.
    policy: () => ({ sandbox: [], global: [], published: ports.map((p) => `127.0.0.1:${p}`) }),
    resolve: async () => [],
    onDecision: () => {},
  });
  // As the daemon's proxy guard does for a Docker sandbox: the forwarder hands its listener over on listen.sock.
  const lib = fdPassing();
  if (lib) {
    serveListenerHandoff({
      lib,
      path: join(dirname(socketPath!), "listen.sock"),
      adopt: (fd) => {
        const l = proxy.serveListener(fd);
        console.log("handed over");
        return l;
      },
      log: { warn: (msg, fields) => console.error(msg, fields) },
    });
  }
  console.log(lib ? "ready" : "ready (no fd passing here: the forwarder relays)");
  await new Promise(() => {});
}

// ── the client ───────────────────────────────────────────────────────────

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  return lineReader(stream)();
}

/** A TCP connection to 127.0.0.1:port, or (via) a CONNECT tunnel through the forwarder to it. */
function open(port: number, via: number | string | null): Promise<{ s: Socket; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    const s =
      typeof via === "string"
        ? connect({ path: via, allowHalfOpen: true })
        : connect({ host: "127.0.0.1", port: via ?? port, allowHalfOpen: true, noDelay: true });
    s.on("error", reject);
    if (via === null) return void s.once("connect", () => resolve({ s, rest: Buffer.alloc(0) }));
    s.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
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

const download = (port: number, via: number | string | null) => transferDown(() => open(port, via), SIZE);
const upload = (port: number, via: number | string | null) => transferUp(() => open(port, via), SIZE);

/** One small HTTP request on a fresh connection: direct, or as an absolute-URI request to the forwarder. */
function small(port: number, via: number | null): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const s = connect({ host: "127.0.0.1", port: via ?? port, noDelay: true });
    const target = via === null ? "/" : `http://127.0.0.1:${port}/`;
    s.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    let out = "";
    s.on("data", (d: Buffer) => (out += d));
    s.on("end", () => {
      const ms = performance.now() - t;
      s.destroy();
      if (!out.startsWith("HTTP/1.1 200")) return reject(new Error(out));
      resolve(ms);
    });
    s.on("error", reject);
  });
}

/** CPU milliseconds (user+system) a process has used so far, from /proc (Linux); null elsewhere. */
function cpuMs(pid: number): number | null {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const load = () => loadavg().map((x) => x.toFixed(2)).join(" ");

/** squid's binary when installed, else null (the squid column is then left out, and said so). */
function squidBinary(): string | null {
  for (const p of ["/usr/sbin/squid", "/usr/local/sbin/squid"]) if (Bun.spawnSync(["test", "-x", p]).exitCode === 0) return p;
  return null;
}

/** A free port on 127.0.0.1 (closed again at once; squid takes it a moment later). */
async function freePort(): Promise<number> {
  const s = createServer();
  const port = await new Promise<number>((r) => s.listen(0, "127.0.0.1", () => r((s.address() as { port: number }).port)));
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** squid in the foreground on a port of its own, a forward proxy with no cache that lets these loopback servers through. */
async function startSquid(bin: string, dir: string): Promise<{ proc: ReturnType<typeof Bun.spawn>; port: number }> {
  const port = await freePort();
  const conf = join(dir, "squid.conf");
  mkdirSync(join(dir, "squid"), { recursive: true, mode: 0o777 });
  chmodSync(join(dir, "squid"), 0o777);
  writeFileSync(
    conf,
    [
      `http_port 127.0.0.1:${port}`,
      "acl localnet src 127.0.0.0/8",
      "acl bench dst 127.0.0.1",
      "http_access allow localnet bench",
      "http_access deny all",
      "cache deny all",
      "access_log none",
      `cache_log ${join(dir, "squid", "cache.log")}`,
      `pid_filename ${join(dir, "squid", "squid.pid")}`,
      `coredump_dir ${join(dir, "squid")}`,
      "shutdown_lifetime 0 seconds",
      "",
    ].join("\n"),
  );
  const proc = Bun.spawn([bin, "-N", "-f", conf], { stdout: "ignore", stderr: "ignore" });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((r) => {
      const s = connect({ host: "127.0.0.1", port }, () => {
        s.destroy();
        r(true);
      });
      s.on("error", () => r(false));
    });
    if (up) return { proc, port };
    await Bun.sleep(100);
  }
  proc.kill();
  throw new Error(`squid did not listen on 127.0.0.1:${port} within 10 s (see ${join(dir, "squid", "cache.log")})`);
}

if (role === undefined || role === "--json") {
  const dir = mkdtempSync(join(tmpdir(), "sbxb-"));
  const socketPath = join(dir, "sb", "proxy.sock");
  const children: ReturnType<typeof Bun.spawn>[] = [];
  try {
    const servers = Bun.spawn(["bun", import.meta.path, "--servers"], { stdout: "pipe", stderr: "inherit" });
    children.push(servers);
    const ports = JSON.parse(await firstLine(servers.stdout as ReadableStream<Uint8Array>)) as { down: number; up: number; web: number };
    const proxy = Bun.spawn(["bun", import.meta.path, "--proxy", socketPath, String(ports.down), String(ports.up), String(ports.web)], {
      stdout: "pipe",
      stderr: "inherit",
    });
    children.push(proxy);
    const proxyLine = lineReader(proxy.stdout as ReadableStream<Uint8Array>);
    const proxyReady = await proxyLine();
    const fw = Bun.spawn(["bun", join(import.meta.dir, "../shims/forwarder.ts"), "--port", "0"], {
      env: { PATH: process.env.PATH ?? "", SBX_PROXY_SOCKET: socketPath },
      stdout: "pipe",
      stderr: "inherit",
    });
    children.push(fw);
    const fwPort = Number(/127\.0\.0\.1:(\d+)/.exec(await firstLine(fw.stdout as ReadableStream<Uint8Array>))?.[1]);
    // A second forwarder with no handoff socket to find: it relays every connection to the proxy socket.
    const relayFw = Bun.spawn(["bun", join(import.meta.dir, "../shims/forwarder.ts"), "--port", "0"], {
      env: { PATH: process.env.PATH ?? "", SBX_PROXY_SOCKET: socketPath, SBX_LISTEN_SOCKET: join(dir, "none.sock") },
      stdout: "pipe",
      stderr: "inherit",
    });
    children.push(relayFw);
    const relayPort = Number(/127\.0\.0\.1:(\d+)/.exec(await firstLine(relayFw.stdout as ReadableStream<Uint8Array>))?.[1]);
    // The full path as a Docker sandbox has it: the proxy accepts on the forwarder's listener (one relay, not two).
    const handedOver = proxyReady === "ready" ? (await proxyLine()) === "handed over" : false;
    if (!process.argv.includes("--json")) console.log(handedOver ? "forwarder's listener handed over to the proxy" : `no handoff: ${proxyReady}`);

    const squidBin = squidBinary();
    const squid = squidBin ? await startSquid(squidBin, dir) : null;
    if (squid) children.push(squid.proc);
    if (!process.argv.includes("--json")) console.log(squid ? `squid beside, on 127.0.0.1:${squid.port}` : "squid is not installed: no squid column (apt-get install squid)");

    const loadBefore = load();
    // Interleaved rounds (direct, full path, socket only; down then up), so that load from other work on the
    // machine falls on every path alike; the first round is a warm-up. CPU per path is summed per process.
    type Path = "direct" | "full" | "relayed" | "socket" | "squid";
    const vias: Record<Path, number | string | null> = { direct: null, full: fwPort, relayed: relayPort, socket: socketPath, squid: squid?.port ?? null };
    const pids: Record<Path, { name: string; pid: number }[]> = {
      direct: [{ name: "server", pid: servers.pid }],
      full: [{ name: "server", pid: servers.pid }, { name: "proxy", pid: proxy.pid }, { name: "forwarder", pid: fw.pid }],
      relayed: [{ name: "server", pid: servers.pid }, { name: "proxy", pid: proxy.pid }, { name: "forwarder", pid: relayFw.pid }],
      socket: [{ name: "server", pid: servers.pid }, { name: "proxy", pid: proxy.pid }],
      squid: [{ name: "server", pid: servers.pid }, ...(squid ? [{ name: "squid", pid: squid.proc.pid }] : [])],
    };
    const paths: Path[] = squid ? ["direct", "full", "relayed", "socket", "squid"] : ["direct", "full", "relayed", "socket"];
    const rate: Record<string, number[]> = {};
    const cpu: Record<string, Record<string, number>> = {};
    for (let round = 0; round <= ROUNDS; round++) {
      for (const dir of ["down", "up"] as const) {
        for (const path of paths) {
          const before = pids[path].map((p) => cpuMs(p.pid));
          const self = selfCpuMs();
          const mbps = await (dir === "down" ? download(ports.down, vias[path]) : upload(ports.up, vias[path]));
          if (round === 0) continue;
          const key = `${dir} ${path}`;
          (rate[key] ??= []).push(mbps);
          const acc = (cpu[key] ??= {});
          acc.client = (acc.client ?? 0) + selfCpuMs() - self;
          pids[path].forEach((p, i) => {
            const now = cpuMs(p.pid);
            const was = before[i];
            if (now !== null && was !== null && was !== undefined) acc[p.name] = (acc[p.name] ?? 0) + now - was;
          });
        }
      }
    }
    const med = (key: string) => summarize(rate[key]!).median;
    const directDown = med("down direct");
    const proxyDown = med("down full");
    const socketDown = med("down socket");
    const directUp = med("up direct");
    const proxyUp = med("up full");
    const socketUp = med("up socket");
    const relayedDown = med("down relayed");
    const relayedUp = med("up relayed");
    // Latency pairs interleaved too: one direct request, then one through the forwarder, LATENCY_RUNS times; then the
    // same again once STEADY_AFTER more rounds have run (see there).
    type Lat = { direct: number[]; proxied: number[]; tunnel: number[]; squid: number[]; squidTunnel: number[] };
    const rounds = async (count: number, into: Lat | null) => {
      for (let i = 0; i < count; i++) {
        const d = await small(ports.web, null);
        const p = await small(ports.web, fwPort);
        const q = squid ? await small(ports.web, squid.port) : 0;
        const t = performance.now();
        const { s } = await open(ports.web, fwPort);
        s.destroy();
        const tl = performance.now() - t;
        let sq = 0;
        if (squid) {
          const t2 = performance.now();
          const { s: s2 } = await open(ports.web, squid.port);
          s2.destroy();
          sq = performance.now() - t2;
        }
        if (!into) continue; // warm-up
        into.direct.push(d);
        into.proxied.push(p);
        into.tunnel.push(tl);
        if (squid) {
          into.squid.push(q);
          into.squidTunnel.push(sq);
        }
      }
    };
    const lat: Lat = { direct: [], proxied: [], tunnel: [], squid: [], squidTunnel: [] };
    const steady: Lat = { direct: [], proxied: [], tunnel: [], squid: [], squidTunnel: [] };
    await rounds(10, null);
    await rounds(LATENCY_RUNS, lat);
    await rounds(STEADY_AFTER, null);
    await rounds(LATENCY_RUNS, steady);
    const directLat = summarize(lat.direct).median;
    const proxyLat = summarize(lat.proxied).median;
    const tunnelLat = summarize(lat.tunnel).median;

    report([
      { name: "100 MB download via the sandbox's port (listener handed to the proxy)", unit: "MB/s", value: proxyDown, baselineName: "direct loopback", baseline: directDown, better: "higher", target: 0.5 },
      { name: "100 MB upload via the sandbox's port (listener handed to the proxy)", unit: "MB/s", value: proxyUp, baselineName: "direct loopback", baseline: directUp, better: "higher", target: 0.5 },
      { name: "100 MB download via the forwarder's relay (fallback: no handoff)", unit: "MB/s", value: relayedDown, baselineName: "direct loopback", baseline: directDown, better: "higher" },
      { name: "100 MB upload via the forwarder's relay (fallback: no handoff)", unit: "MB/s", value: relayedUp, baselineName: "direct loopback", baseline: directUp, better: "higher" },
      { name: "100 MB download via proxy socket only (no forwarder)", unit: "MB/s", value: socketDown, baselineName: "direct loopback", baseline: directDown, better: "higher" },
      { name: "100 MB upload via proxy socket only (no forwarder)", unit: "MB/s", value: socketUp, baselineName: "direct loopback", baseline: directUp, better: "higher" },
      { name: "small HTTP request p50 via the sandbox's port", unit: "ms", value: proxyLat, baselineName: "direct", baseline: directLat, better: "lower" },
      ...(squid
        ? [
            { name: "100 MB download via squid (beside: glovebox's egress proxy)", unit: "MB/s", value: med("down squid"), baselineName: "direct loopback", baseline: directDown, better: "higher" as const },
            { name: "100 MB upload via squid", unit: "MB/s", value: med("up squid"), baselineName: "direct loopback", baseline: directUp, better: "higher" as const },
            { name: "small HTTP request p50 via squid", unit: "ms", value: summarize(lat.squid).median, baselineName: "direct", baseline: directLat, better: "lower" as const },
          ]
        : []),
    ]);
    if (squid && !process.argv.includes("--json")) {
      console.log(
        `sbx vs squid: download ${(proxyDown / med("down squid")).toFixed(2)}x, upload ${(proxyUp / med("up squid")).toFixed(2)}x squid's throughput; added p50 ${(proxyLat - directLat).toFixed(3)} ms vs squid's ${(summarize(lat.squid).median - directLat).toFixed(3)} ms`,
      );
    }
    const added = proxyLat - directLat;
    const perTransfer = (key: string) =>
      Object.entries(cpu[key] ?? {})
        .map(([name, ms]) => `${name} ${(ms / ROUNDS).toFixed(0)}`)
        .join(", ");
    const cpuLines = Object.keys(cpu).map((key) => ({ path: key, cpuMsPer100MB: Object.fromEntries(Object.entries(cpu[key]!).map(([n, ms]) => [n, Math.round(ms / ROUNDS)])) }));
    const loadAfter = load();
    // When the machine is fully CPU-bound (one free core, other work running), throughput follows CPU per byte: the
    // full path then gets (CPU of the endpoints alone) / (CPU of endpoints + proxy + forwarder) of direct.
    const cpuSum = (key: string) => Object.values(cpu[key] ?? {}).reduce((a, b) => a + b, 0);
    const ceiling = { down: cpuSum("down direct") / cpuSum("down full"), up: cpuSum("up direct") / cpuSum("up full") };
    if (process.argv.includes("--json")) {
      for (const l of cpuLines) console.log(JSON.stringify(l));
      console.log(JSON.stringify({ handedOver, oneCoreCeiling: ceiling, loadavgBefore: loadBefore, loadavgAfter: loadAfter, rounds: ROUNDS, cores: navigator.hardwareConcurrency }));
    } else {
      console.log(`CPU ms per 100 MB by process (mean of ${ROUNDS} interleaved rounds; medians above):`);
      for (const key of Object.keys(cpu)) console.log(`  ${key.padEnd(12)} ${perTransfer(key)}`);
      for (const dir of ["down", "up"] as const) {
        console.log(`  ${dir}: the full path's ratio if it all ran on one core ≈ ${ceiling[dir].toFixed(2)}x (endpoints' CPU / all CPU); more cores let the relay run beside the endpoints`);
      }
      console.log(`load average (1, 5, 15 min) before: ${loadBefore}; after: ${loadAfter}; ${navigator.hardwareConcurrency} cores`);
    }
    const squidTunnelLat = squid ? summarize(lat.squidTunnel).median : null;
    const line = { name: "added p50 latency of a small request", unit: "ms", value: added, target: 1, met: added <= 1, connectTunnelP50: tunnelLat, squidConnectTunnelP50: squidTunnelLat };
    const p50 = (xs: number[]) => summarize(xs).median;
    const steadyLine = {
      name: `steady-state added p50 latency of a small request (after ${STEADY_AFTER} more rounds)`,
      unit: "ms",
      value: p50(steady.proxied) - p50(steady.direct),
      squid: squid ? p50(steady.squid) - p50(steady.direct) : null,
      connectTunnelP50: p50(steady.tunnel),
      squidConnectTunnelP50: squid ? p50(steady.squidTunnel) : null,
    };
    if (process.argv.includes("--json")) {
      console.log(JSON.stringify(line));
      console.log(JSON.stringify(steadyLine));
    } else {
      console.log(
        `added p50 latency of a small request: ${added.toFixed(3)} ms (target ≤ 1 ms: ${added <= 1 ? "met" : "NOT met"}); CONNECT tunnel set-up p50 ${tunnelLat.toFixed(3)} ms${squidTunnelLat === null ? "" : ` (squid's ${squidTunnelLat.toFixed(3)} ms)`}`,
      );
      console.log(
        `steady state, after ${STEADY_AFTER} more rounds: added p50 ${steadyLine.value.toFixed(3)} ms${steadyLine.squid === null ? "" : ` vs squid's ${steadyLine.squid.toFixed(3)} ms`}; CONNECT tunnel set-up p50 ${steadyLine.connectTunnelP50.toFixed(3)} ms${steadyLine.squidConnectTunnelP50 === null ? "" : ` (squid's ${steadyLine.squidConnectTunnelP50.toFixed(3)} ms)`}`,
      );
    }
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    rmSync(dir, { recursive: true, force: true });
  }
}
