// TLS termination for a host a secret is bound to, beside the same requests through the opaque tunnel (no secret bound)
// and direct: added p50 of a small HTTPS request on a kept-alive connection, and a 50 MB download's throughput.
//
// The upstream (Bun's TLS server) and the proxy each run in their own process, as in real use; the client is this
// process: CONNECT over the proxy socket, then TLS inside, then requests one after another on that connection.
// Targets (issue 37): added p50 ≤ +1 ms over the tunnel, throughput ≥ 0.5x direct.
//
// Beside MB/s, the CPU the relaying process spent per 50 MB (utime+stime from /proc, ms): on a busy 2-core machine it
// moves less than MB/s does. The floor: a bare relay in its own process that ends the client's TLS and opens its own to
// the upstream (the same node:tls carriers in Bun), copying bytes both ways with no HTTP reading, no swap, no scan:
// what terminating costs on this machine before sbx does anything. Beside it the same relay on Bun's own sockets
// (Bun.listen, upgradeTLS on the accepted socket, Bun.connect with TLS; no node:net or node:tls stream): whether the
// carriers themselves are the cost; with SBX_BENCH_MIXED=1 also one side each, to see which side it is on.
//
// The client reaches the proxy (and each relay) over TCP on 127.0.0.1, as a sandbox does: the forwarder's 127.0.0.1
// listener, handed to the proxy (serveListener). SBX_BENCH_VIA=unix takes the proxy socket instead (the forwarder's
// fallback while no daemon holds its listener; a unix socket's 208 KiB send buffer throttles a big download there).
//
// Run: bun bench/terminate.bench.ts [--json] (SBX_BENCH_ROUNDS=5, SBX_BENCH_MIXED=1, SBX_BENCH_VIA=unix); each round's
// downloads go to stderr.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect, createSecureContext, TLSSocket } from "node:tls";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { report, summarize } from "./lib";

const MB = 1024 * 1024;
const BIG = 50 * MB;
const ROUNDS = Number(process.env.SBX_BENCH_ROUNDS ?? 5);
const LATENCY_RUNS = 400;
const role = process.argv[2];

if (role === "--upstream") {
  const [cert, key] = process.argv.slice(3);
  // A Blob, made once: each Response of it shares its bytes. A Response of the Uint8Array itself copies all 50 MB into
  // fresh memory per request (160-240 ms here, the server's loop blocked meanwhile; 3 ms when the allocator happens to
  // have a freed copy to reuse), which landed on whichever download came at the wrong moment: the bimodal figures.
  const big = new Blob([new Uint8Array(BIG).fill(97)]);
  const s = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: readFileSync(cert!, "utf8"), key: readFileSync(key!, "utf8") },
    fetch: (r) => (new URL(r.url).pathname === "/big" ? new Response(big) : new Response("ok")),
  });
  console.log(String(s.port));
  await new Promise(() => {});
}

/**
 * Where a relay of this bench listens: `tcp` (127.0.0.1, a port picked, printed) or a unix socket's path ("ready"
 * printed). The main process reads the line: a port, or "ready".
 */
const TCP = "tcp";

if (role === "--proxy") {
  const [where, port, caCert, caKey, upstreamCa] = process.argv.slice(3);
  // Its own socket always (startEgressProxy's); over TCP the sandbox's connections come on a listener handed to it.
  const socketPath = where === TCP ? join(dirname(caCert!), "proxy.sock") : where;
  const { startEgressProxy } = await import("../src/proxy/egress-proxy");
  const { loadCa, issueLeaf } = await import("../src/tls/x509");
  const signer = await loadCa(readFileSync(caCert!, "utf8"), readFileSync(caKey!, "utf8"));
  const leaf = await issueLeaf(signer, ["bound.test"]);
  const { leafContext } = await import("../src/tls/leaf-context");
  const ctx = leafContext(leaf.certPem, leaf.keyPem);
  const trust = readFileSync(upstreamCa!, "utf8");
  const proxy = await startEgressProxy({
    socketPath: socketPath!,
    sandbox: { id: 1, name: "bench" },
    policy: () => ({ sandbox: [`bound.test:${port}`, `tunnel.test:${port}`], global: [], published: [`127.0.0.1:${port}`] }),
    resolve: async () => ["127.0.0.1"],
    pace: null,
    secrets: {
      secrets: () => [{ name: "TOKEN", hosts: ["bound.test"], rules: [{ methods: ["GET"], path: "/**" }], header: { name: "Authorization", template: "Bearer {}" }, inBody: false, placeholder: "sk_live_placeholderplaceholder0" }],
      values: async () => new Map([["TOKEN", "sk_live_realvalue0realvalue0123"]]),
      contextFor: async () => ctx,
      upstreamCa: trust,
    },
  });
  if (where === TCP) {
    const { fdPassing } = await import("../shims/fd-pass");
    const lib = fdPassing();
    if (lib === null) throw new Error("no fd passing here: SBX_BENCH_VIA=unix measures the proxy socket");
    const l = lib.listenLoopback(0);
    proxy.serveListener(l.fd);
    console.log(String(l.port));
  } else console.log("ready");
  await new Promise(() => {});
}

if (role === "--bare") {
  // The floor: CONNECT answered, the client's TLS ended with a leaf for bound.test, a verified TLS connection opened to
  // the upstream, and the two piped. Nothing read, swapped or scanned.
  const [socketPath, port, caCert, caKey, upstreamCa] = process.argv.slice(3);
  const { createServer } = await import("node:net");
  const { loadCa, issueLeaf } = await import("../src/tls/x509");
  const leaf = await issueLeaf(await loadCa(readFileSync(caCert!, "utf8"), readFileSync(caKey!, "utf8")), ["bound.test"]);
  const secureContext = createSecureContext({ cert: leaf.certPem, key: leaf.keyPem });
  const ca = readFileSync(upstreamCa!, "utf8");
  const server = createServer((c) => {
    c.once("data", (d: Buffer) => {
      const at = d.indexOf("\r\n\r\n");
      c.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (at + 4 < d.length) c.unshift(d.subarray(at + 4));
      const inner = new TLSSocket(c, { isServer: true, secureContext });
      const up = tlsConnect({ host: "127.0.0.1", port: Number(port), servername: "bound.test", ca });
      inner.pipe(up);
      up.pipe(inner);
      const end = () => (inner.destroy(), up.destroy());
      inner.on("error", end);
      up.on("error", end);
      inner.on("close", end);
      up.on("close", end);
    });
  });
  if (socketPath === TCP) server.listen(0, "127.0.0.1", () => console.log(String((server.address() as { port: number }).port)));
  else server.listen(socketPath!, () => console.log("ready"));
  await new Promise(() => {});
}

if (role === "--native") {
  // The same floor on Bun's own sockets: Bun.listen's accepted socket answered, then upgradeTLS (server side) on it,
  // Bun.connect with TLS to the upstream, and the two joined by hand (write what fits, pause the other side until the
  // rest drains). No node:net or node:tls stream in between. `sides` (server, client or both) says which side is Bun's;
  // the other is node:tls's as in the bare relay (the mixed ones show which side the difference is on).
  const [socketPath, port, caCert, caKey, upstreamCa, sides] = process.argv.slice(3);
  const bunServer = sides !== "client";
  const bunClient = sides !== "server";
  const { loadCa, issueLeaf } = await import("../src/tls/x509");
  const leaf = await issueLeaf(await loadCa(readFileSync(caCert!, "utf8"), readFileSync(caKey!, "utf8")), ["bound.test"]);
  const ca = readFileSync(upstreamCa!, "utf8");
  /** One end as the relay drives it: `send` says whether it took all (else `drained` is called once it has). */
  interface End {
    send(d: Uint8Array): boolean;
    pause(): void;
    resume(): void;
    end(): void;
    drained: () => void;
  }
  /** A Bun socket's end: what write does not take is queued (copied: Bun may reuse a read's buffer) until drain. */
  const bunEnd = (s: Bun.Socket<unknown>) => {
    const queue: Uint8Array[] = [];
    const e: End & { drain(): void } = {
      send(d) {
        if (queue.length > 0) return queue.push(d.slice()), false;
        const n = s.write(d);
        if (n >= d.length) return true;
        queue.push(d.slice(Math.max(n, 0)));
        return false;
      },
      drain() {
        while (queue.length > 0) {
          const d = queue[0]!;
          const n = s.write(d);
          if (n < d.length) return void (queue[0] = d.subarray(Math.max(n, 0)));
          queue.shift();
        }
        e.drained();
      },
      pause: () => s.pause(),
      resume: () => s.resume(),
      end: () => s.end(),
      drained: () => {},
    };
    return e;
  };
  const nodeEnd = (s: TLSSocket): End => {
    const e: End = {
      send: (d) => s.write(d),
      pause: () => s.pause(),
      resume: () => s.resume(),
      end: () => s.destroy(),
      drained: () => {},
    };
    s.on("drain", () => e.drained());
    return e;
  };
  /** Joins two ends: what one reads goes to the other, the reader paused while the other is full. */
  const join = (a: End, b: End) => {
    a.drained = () => b.resume();
    b.drained = () => a.resume();
    const end = () => (a.end(), b.end());
    return { aToB: (d: Uint8Array) => void (b.send(d) || a.pause()), bToA: (d: Uint8Array) => void (a.send(d) || b.pause()), end };
  };
  /** The upstream end, its reads given to `onData` once joined (bytes the client sent meanwhile wait in `early`). */
  const dialUp = (ready: (e: End, feed: (onData: (d: Uint8Array) => void, onEnd: () => void) => void) => void) => {
    if (!bunClient) {
      const up = tlsConnect({ host: "127.0.0.1", port: Number(port), servername: "bound.test", ca });
      up.once("secureConnect", () => ready(nodeEnd(up), (onData, onEnd) => (up.on("data", onData), up.on("close", onEnd), up.on("error", onEnd))));
      return;
    }
    let onData: (d: Uint8Array) => void = () => {};
    let onEnd = () => {};
    let e: ReturnType<typeof bunEnd> | null = null;
    void Bun.connect({
      hostname: "127.0.0.1",
      port: Number(port),
      tls: { ca, serverName: "bound.test", rejectUnauthorized: true },
      socket: {
        open: (s) => ready((e = bunEnd(s)), (d, f) => ((onData = d), (onEnd = f))),
        data: (_s, d) => onData(d),
        drain: () => e?.drain(),
        close: () => onEnd(),
        error: () => onEnd(),
      },
    });
  };
  /** A client end whose TLS has just been started: joined to a new upstream once that is ready. */
  const relay = (client: End, clientData: (f: (d: Uint8Array) => void) => void, clientEnd: (f: () => void) => void) => {
    const early: Uint8Array[] = [];
    let toUp: ((d: Uint8Array) => void) | null = null;
    let end = () => client.end();
    clientData((d) => (toUp ? toUp(d) : void early.push(d.slice())));
    clientEnd(() => end());
    dialUp((up, feed) => {
      const j = join(client, up);
      toUp = j.aToB;
      end = j.end;
      feed(j.bToA, j.end);
      for (const d of early.splice(0)) j.aToB(d);
    });
  };
  const CONNECTED = "HTTP/1.1 200 Connection Established\r\n\r\n";
  let listening: number | null = null;
  if (bunServer) {
    type Head = { head: string; done: boolean };
    const handlers: { socketHandlers: Bun.SocketHandler<Head> } = {
      socketHandlers: {
        open(raw) {
          raw.data = { head: "", done: false };
        },
        data(raw, d) {
          if (raw.data.done) return;
          raw.data.head += Buffer.from(d).toString("latin1");
          if (!raw.data.head.includes("\r\n\r\n")) return;
          raw.data.done = true;
          raw.write(CONNECTED);
          let onData: (d: Uint8Array) => void = () => {};
          let onEnd = () => {};
          let e: ReturnType<typeof bunEnd> | null = null;
          const [, tls] = raw.upgradeTLS({
            tls: { cert: leaf.certPem, key: leaf.keyPem },
            socket: { data: (_s, c) => onData(c), drain: () => e?.drain(), close: () => onEnd(), error: () => onEnd() },
          });
          e = bunEnd(tls);
          relay(e, (f) => (onData = f), (f) => (onEnd = f));
        },
      },
    };
    const l = socketPath === TCP ? Bun.listen<Head>({ hostname: "127.0.0.1", port: 0, socket: handlers.socketHandlers }) : Bun.listen<Head>({ unix: socketPath!, socket: handlers.socketHandlers });
    listening = socketPath === TCP ? (l as { port: number }).port : null;
  } else {
    const { createServer } = await import("node:net");
    const secureContext = createSecureContext({ cert: leaf.certPem, key: leaf.keyPem });
    const server = createServer((c) => {
      c.once("data", () => {
        c.write(CONNECTED);
        const inner = new TLSSocket(c, { isServer: true, secureContext });
        relay(nodeEnd(inner), (f) => inner.on("data", f), (f) => (inner.on("close", f), inner.on("error", f)));
      });
    });
    if (socketPath === TCP) await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    else server.listen(socketPath!);
    listening = socketPath === TCP ? (server.address() as { port: number }).port : null;
  }
  console.log(listening === null ? "ready" : String(listening));
  await new Promise(() => {});
}

/** CPU milliseconds (user + system) a process has used so far. */
function cpuMs(pid: number): number {
  // /proc/<pid>/stat: fields after the ")" of the command name; utime and stime are the 12th and 13th, in ticks (100/s).
  const rest = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(rest[11]) + Number(rest[12])) * 1000) / 100;
}

/** A line from a child's stdout. */
async function firstLine(p: Bun.Subprocess<"ignore", "pipe", "inherit">): Promise<string> {
  const r = p.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await r.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  r.releaseLock();
  return text.trim();
}

/** A TLS connection to the upstream: direct, or inside a CONNECT through a relay (`at`: `tcp:<port>` or a socket's path). */
async function open(how: string, port: number, at: string, ca: string): Promise<TLSSocket> {
  const name = how === "direct" || how === "tunnel" ? "tunnel.test" : "bound.test";
  let raw: Socket | undefined;
  if (how !== "direct") {
    raw = at.startsWith("tcp:") ? netConnect({ host: "127.0.0.1", port: Number(at.slice(4)), noDelay: true }) : netConnect({ path: at });
    await new Promise<void>((resolve, reject) => {
      raw!.once("error", reject);
      raw!.write(`CONNECT ${name}:${port} HTTP/1.1\r\nHost: ${name}:${port}\r\n\r\n`);
      let head = "";
      const on = (d: Buffer) => {
        head += d.toString("latin1");
        if (!head.includes("\r\n\r\n")) return;
        raw!.off("data", on);
        if (!head.startsWith("HTTP/1.1 200")) return reject(new Error(head));
        resolve();
      };
      raw!.on("data", on);
    });
  }
  const t = tlsConnect(how === "direct" ? { host: "127.0.0.1", port, servername: name, ca } : { socket: raw!, servername: name, ca });
  await new Promise<void>((resolve, reject) => {
    t.once("secureConnect", resolve);
    t.once("error", reject);
  });
  return t;
}

/** One GET on a kept-alive TLS connection, read to the end of its body (Content-Length framing). */
function get(t: TLSSocket, path: string, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    let need = -1;
    let headEnd = -1;
    let got = 0;
    const on = (d: Buffer) => {
      if (need < 0) {
        buf = Buffer.concat([buf, d]);
        headEnd = buf.indexOf("\r\n\r\n");
        if (headEnd < 0) return;
        const head = buf.subarray(0, headEnd).toString("latin1");
        if (!head.startsWith("HTTP/1.1 200")) return reject(new Error(`not a 200: ${head.split("\r\n")[0]}`));
        const m = /content-length:\s*(\d+)/i.exec(head);
        if (!m) return reject(new Error(`no length: ${buf.subarray(0, headEnd)}`));
        need = Number(m[1]);
        got = buf.length - headEnd - 4;
      } else got += d.length;
      if (got >= need) {
        t.off("data", on);
        resolve(need);
      }
    };
    t.on("data", on);
    t.write(`GET ${path} HTTP/1.1\r\nHost: ${name}\r\n\r\n`);
  });
}

if (role === undefined) {
  const dir = mkdtempSync(join(tmpdir(), "sbx-bench-term-"));
  const children: Bun.Subprocess[] = [];
  try {
    const { makeCa, loadCa, issueLeaf } = await import("../src/tls/x509");
    const world = await makeCa("bench world CA");
    const sbx = await makeCa("bench sbx CA");
    const site = await issueLeaf(await loadCa(world.certPem, world.keyPem), ["bound.test", "tunnel.test"]);
    const f = (n: string, t: string) => (writeFileSync(join(dir, n), t), join(dir, n));
    const up = Bun.spawn([process.execPath, import.meta.path, "--upstream", f("site.pem", site.certPem), f("site.key", site.keyPem)], { stdout: "pipe", stderr: "inherit" });
    children.push(up);
    const port = Number(await firstLine(up));
    const viaUnix = process.env.SBX_BENCH_VIA === "unix";
    /** A relay's listening place as its process says it: a port over TCP, its socket's path otherwise. */
    const endpoint = (line: string, path: string) => (viaUnix ? path : `tcp:${line}`);
    const socketPath = join(dir, "proxy.sock");
    const px = Bun.spawn([process.execPath, import.meta.path, "--proxy", viaUnix ? socketPath : TCP, String(port), f("sbx.pem", sbx.certPem), f("sbx.key", sbx.keyPem), f("world.pem", world.certPem)], { stdout: "pipe", stderr: "inherit" });
    children.push(px);
    const proxyAt = endpoint(await firstLine(px), socketPath);
    // Each relay in its own process: the node:tls floor, the Bun-native one, and (SBX_BENCH_MIXED=1) one side each.
    const relays: Record<string, { path: string; pid: number }> = {};
    const relay = async (k: string, ...args: string[]) => {
      const path = join(dir, `${k}.sock`);
      const p = Bun.spawn([process.execPath, import.meta.path, ...args.slice(0, 1), viaUnix ? path : TCP, String(port), join(dir, "sbx.pem"), join(dir, "sbx.key"), join(dir, "world.pem"), ...args.slice(1)], { stdout: "pipe", stderr: "inherit" });
      children.push(p);
      relays[k] = { path: endpoint(await firstLine(p), path), pid: p.pid };
    };
    await relay("bare", "--bare");
    await relay("native", "--native", "both");
    const mixed = process.env.SBX_BENCH_MIXED === "1";
    if (mixed) {
      await relay("nserver", "--native", "server");
      await relay("nclient", "--native", "client");
    }
    const kinds = ["direct", "tunnel", "terminated", "bare", "native", ...(mixed ? ["nserver", "nclient"] : [])] as const;
    type Kind = (typeof kinds)[number];
    const ends = (k: Kind) => k !== "direct" && k !== "tunnel";
    const trust = (k: Kind) => (ends(k) ? sbx.certPem : world.certPem);
    const via = (k: Kind) => relays[k]?.path ?? proxyAt;
    /** The process that relays each kind (direct: the upstream's own, for scale). */
    const relayPid = (k: Kind) => relays[k]?.pid ?? (k === "direct" ? up.pid : px.pid);
    const hostOf = (k: Kind) => `${ends(k) ? "bound.test" : "tunnel.test"}:${port}`;
    const lat: Record<string, number[]> = Object.fromEntries(kinds.map((k) => [k, []]));
    const rate: Record<string, number[]> = Object.fromEntries(kinds.map((k) => [k, []]));
    const cpu: Record<string, number[]> = Object.fromEntries(kinds.map((k) => [k, []]));
    // One download of each, untimed: the first 50 MB any of them moves runs at half speed (cold code, fresh buffers).
    for (const k of kinds) {
      const t = await open(k, port, via(k), trust(k));
      await get(t, "/big", hostOf(k));
      t.destroy();
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const k of kinds) {
        const name = hostOf(k);
        const t = await open(k, port, via(k), trust(k));
        for (let i = 0; i < 20; i++) await get(t, "/small", name); // warm the connection
        for (let i = 0; i < LATENCY_RUNS / ROUNDS; i++) {
          const s = performance.now();
          await get(t, "/small", name);
          lat[k]!.push(performance.now() - s);
        }
        const c0 = cpuMs(relayPid(k));
        const s = performance.now();
        await get(t, "/big", name);
        rate[k]!.push(BIG / MB / ((performance.now() - s) / 1000));
        cpu[k]!.push(cpuMs(relayPid(k)) - c0);
        t.destroy();
      }
      // Per round (stderr), so a spread shows whether it is per process or per round.
      const r = (k: string) => `${rate[k]![round]!.toFixed(0)} MB/s ${cpu[k]![round]!.toFixed(0)} cpu-ms`;
      const x = (k: string) => (rate[k]![round]! / rate.direct![round]!).toFixed(2);
      const more = mixed ? `, Bun server side only ${r("nserver")} (${x("nserver")}x), Bun client side only ${r("nclient")} (${x("nclient")}x)` : "";
      console.error(`round ${round + 1}: direct ${r("direct")}, tunnel ${r("tunnel")}, terminated ${r("terminated")}, bare relay ${r("bare")}, native relay ${r("native")} (terminated ${x("terminated")}x direct, bare ${x("bare")}x, native ${x("native")}x)${more}`);
    }
    const p50 = (k: string) => summarize(lat[k]!).median;
    const med = (k: string) => summarize(rate[k]!).median;
    const cpuMed = (k: string) => summarize(cpu[k]!).median;
    report([
      { name: "small HTTPS request p50, terminated (secret swapped)", unit: "ms", value: p50("terminated"), baselineName: "opaque tunnel", baseline: p50("tunnel"), better: "lower" },
      { name: "added p50, terminated over tunnel", unit: "ms", value: p50("terminated") - p50("tunnel"), baselineName: "the +1 ms target", baseline: 1, better: "lower", target: 1 },
      { name: "small HTTPS request p50, opaque tunnel", unit: "ms", value: p50("tunnel"), baselineName: "direct", baseline: p50("direct"), better: "lower" },
      { name: "50 MB download, terminated", unit: "MB/s", value: med("terminated"), baselineName: "direct", baseline: med("direct"), better: "higher", target: 0.5 },
      { name: "50 MB download, opaque tunnel", unit: "MB/s", value: med("tunnel"), baselineName: "direct", baseline: med("direct"), better: "higher" },
      { name: "50 MB download, bare TLS-terminating relay (the floor)", unit: "MB/s", value: med("bare"), baselineName: "direct", baseline: med("direct"), better: "higher" },
      { name: "50 MB download, bare relay on Bun's native TLS (Bun.listen, upgradeTLS, Bun.connect)", unit: "MB/s", value: med("native"), baselineName: "direct", baseline: med("direct"), better: "higher" },
      { name: "50 MB download, native-TLS bare relay vs node:tls bare relay", unit: "MB/s", value: med("native"), baselineName: "node:tls bare relay", baseline: med("bare"), better: "higher" },
      { name: "proxy CPU per 50 MB, terminated", unit: "ms", value: cpuMed("terminated"), baselineName: "bare relay", baseline: cpuMed("bare"), better: "lower" },
      { name: "proxy CPU per 50 MB, opaque tunnel", unit: "ms", value: cpuMed("tunnel"), baselineName: "bare relay", baseline: cpuMed("bare"), better: "lower" },
      { name: "relay CPU per 50 MB, native-TLS bare relay", unit: "ms", value: cpuMed("native"), baselineName: "node:tls bare relay", baseline: cpuMed("bare"), better: "lower" },
      ...(mixed
        ? [
            { name: "relay CPU per 50 MB, Bun's TLS server side only (node:tls to the upstream)", unit: "ms", value: cpuMed("nserver"), baselineName: "node:tls bare relay", baseline: cpuMed("bare"), better: "lower" as const },
            { name: "relay CPU per 50 MB, Bun's TLS client side only (node:tls to the sandbox)", unit: "ms", value: cpuMed("nclient"), baselineName: "node:tls bare relay", baseline: cpuMed("bare"), better: "lower" as const },
          ]
        : []),
    ]);
  } finally {
    for (const c of children) c.kill();
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0);
}
