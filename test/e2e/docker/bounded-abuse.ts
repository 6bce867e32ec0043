// Runs INSIDE a sandbox (on sbx's Bun) for the bounded soak: one sandbox abusing every endpoint it can reach, as hard as
// a script can, for FLOOD seconds; then it only holds what it may hold (connections, waits, polls, half-sent requests)
// for HOLD seconds, sending nothing new. Prints one JSON line of what it was answered. Built-ins only.
//
//   bun bounded-abuse.ts FLOOD HOLD
import { connect, type Socket } from "node:net";
import { createSocket } from "node:dgram";
import { dirname, join } from "node:path";

const [floodS, holdS] = process.argv.slice(2).map(Number);
const proxy = new URL(process.env.HTTP_PROXY!);
const sockDir = dirname(process.env.SBX_PROXY_SOCKET!);
const bridgeSock = process.env.SBX_BRIDGE_SOCKET!;
const floodUntil = Date.now() + floodS! * 1000;
const holdUntil = floodUntil + holdS! * 1000;
const flooding = () => Date.now() < floodUntil;
const held: Socket[] = [];
const counts: Record<string, number> = {};
const count = (k: string) => void (counts[k] = (counts[k] ?? 0) + 1);
const rand = () => Math.random().toString(36).slice(2, 10);
const report = () => process.stdout.write(`${JSON.stringify(counts)}\n`);
process.on("uncaughtException", (e) => void (counts[`uncaught.${String(e).slice(0, 60)}`] = 1));
process.on("unhandledRejection", (e) => void (counts[`unhandled.${String(e).slice(0, 60)}`] = 1));
// Whatever is still pending when the time is up, the script ends then and says what it saw.
setTimeout(() => {
  counts["ended.by-timer"] = 1;
  report();
  process.exit(0);
}, floodS! * 1000 + holdS! * 1000 + 5000).unref?.();

/** One raw exchange on a TCP connection to the proxy port (or a unix socket): the status line's code, or 0. */
function exchange(text: string | Uint8Array, where: { port: number } | { path: string } = { port: Number(proxy.port) }, keep = false): Promise<number> {
  return new Promise((resolve) => {
    const s = "path" in where ? connect({ path: where.path }) : connect({ port: where.port, host: "127.0.0.1" });
    let got = "";
    const done = (code: number) => {
      if (keep && code === 200) held.push(s);
      else s.destroy();
      resolve(code);
    };
    s.setTimeout(flooding() ? 3000 : 15_000, () => done(0));
    s.on("connect", () => s.write(text));
    s.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (m && (got.includes("\r\n\r\n") || !keep)) done(Number(m[1]));
    });
    s.on("error", () => done(0));
    s.on("close", () => done(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)));
  });
}

/** Idle connections to the proxy port, as many as it takes; each closed one is opened again while flooding. */
async function holdConnections(n: number): Promise<void> {
  const open = () =>
    new Promise<void>((resolve) => {
      const s = connect({ port: Number(proxy.port), host: "127.0.0.1" });
      s.on("error", () => undefined);
      s.resume(); // read (and dropped), so a close by the proxy is seen
      s.once("connect", () => {
        held.push(s);
        resolve();
      });
      s.once("close", () => {
        count("proxy.connection-closed");
        resolve();
      });
    });
  for (let i = 0; i < n && flooding(); i++) await open();
}

/** Requests the proxy refuses: a new name each time (plain HTTP and CONNECT), with the largest head it reads. */
async function denials(): Promise<void> {
  const pad = "x".repeat(15_000);
  while (flooding()) {
    const host = `deny-${rand()}.invalid`;
    const code = Math.random() < 0.5 ? await exchange(`GET http://${host}/ HTTP/1.1\r\nHost: ${host}\r\nX-Pad: ${pad}\r\nConnection: close\r\n\r\n`) : await exchange(`CONNECT ${host}:443 HTTP/1.1\r\nHost: ${host}:443\r\n\r\n`);
    count(`proxy.denied.${code}`);
  }
}

/** The egress desk: asks for ever new hosts, reads the status, and waits on one request as many times as it can. */
async function desk(): Promise<void> {
  const ask = async (host: string) => {
    const body = JSON.stringify({ host, why: `because ${"w".repeat(7000)}` });
    return exchange(`POST /sbx/egress/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  };
  await ask("wait-on-me.example");
  const r = await fetch(`http://127.0.0.1:${proxy.port}/sbx/egress`).then((x) => x.json() as Promise<{ pending: { id: number; host: string }[] }>);
  const id = r.pending.find((p) => p.host === "wait-on-me.example")?.id ?? 1;
  const waiter = async () => {
    while (flooding()) count(`desk.wait.${await exchange(`GET /sbx/egress/approvals/${id}?wait=600 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)}`);
  };
  const asker = async () => {
    while (flooding()) {
      count(`desk.ask.${await ask(`ask-${rand()}.example`)}`);
      count(`desk.status.${await exchange(`GET /sbx/egress HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)}`);
    }
  };
  await Promise.all([...Array.from({ length: 50 }, waiter), asker(), asker()]);
}

/** The forwarder's long poll for its ports, many at once, again as soon as each is answered. */
async function portPolls(): Promise<void> {
  const one = async () => {
    while (flooding()) count(`ports.${await exchange(`GET /sbx/transparent?known=1,2,3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)}`);
  };
  await Promise.all(Array.from({ length: 20 }, one));
}

/** The DNS stub: a query for a new name each time (each one a name the proxy gives an address to, until it may not). */
async function dns(): Promise<void> {
  const sock = createSocket("udp4");
  sock.on("message", () => count("dns.answer"));
  let n = 0;
  while (flooding() && n < 20_000) {
    const name = `n${n++}-${rand()}.example.com`;
    const q = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for (const label of name.split(".")) q.push(label.length, ...Buffer.from(label));
    q.push(0, 0, 1, 0, 1);
    sock.send(Buffer.from(q), 53, "127.77.0.1");
    count("dns.sent");
    if (n % 50 === 0) await Bun.sleep(5);
  }
  sock.close();
}

/** LLM routes with large bodies (no key is set for them: refused or failed, the body never wanted). */
async function llm(): Promise<void> {
  const body = "y".repeat(1024 * 1024);
  while (flooding()) {
    count(`llm.${await exchange(`POST /llm/anthropic/v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`)}`);
  }
}

/** The bridge: refused requests with 1 MiB of argv, and requests whose header never ends, held. */
async function bridge(): Promise<void> {
  const big = JSON.stringify({ tool: "git", args: ["config", "--global", ...Array.from({ length: 254 }, () => "a".repeat(4096))], cwd: "/" }) + "\n";
  const post = (text: string, keep: boolean) =>
    exchange(`POST /v1/run HTTP/1.1\r\nHost: bridge\r\nContent-Length: ${Buffer.byteLength(text) + (keep ? 1000 : 0)}\r\nConnection: close\r\n\r\n${text}`, { path: bridgeSock }, keep);
  const refused = async () => {
    while (flooding()) count(`bridge.big.${await post(big, false)}`);
  };
  const half = async () => {
    while (flooding()) {
      count(`bridge.half.${await post('{"tool":"git","args":["status"', true)}`);
      await Bun.sleep(50);
    }
  };
  await Promise.all([refused(), refused(), refused(), ...Array.from({ length: 10 }, half)]);
}

/** A push of a 12 MiB commit (one long base64 line, and many short ones): the gate scans all of it. */
async function push(): Promise<void> {
  const run = (argv: string[]) => Bun.spawn(argv, { stdout: "ignore", stderr: "pipe" }).exited;
  const buf = new Uint8Array(9 * 1024 * 1024);
  crypto.getRandomValues(buf.subarray(0, 65536));
  for (let i = 65536; i < buf.length; i += 65536) buf.copyWithin(i, 0, 65536);
  const b64 = Buffer.from(buf).toString("base64");
  await Bun.write("soak-big-one.txt", b64.slice(0, 6 * 1024 * 1024));
  await Bun.write("soak-big-lines.txt", b64.slice(6 * 1024 * 1024).replace(/(.{76})/g, "$1\n"));
  await run(["git", "add", "soak-big-one.txt", "soak-big-lines.txt"]);
  await run(["git", "-c", "user.email=a@example.invalid", "-c", "user.name=a", "commit", "-qm", "big"]);
  const t0 = Date.now();
  // Its own other floods keep the bridge busy: 75 is its 429 (as many requests under way as it may have); again.
  let code = 75;
  for (let i = 0; code === 75 && flooding(); i++) {
    code = await run(["git", "push", "-q", "origin", "HEAD:refs/heads/sbx/abuser/big"]);
    counts["push.tries"] = i + 1;
  }
  counts["push.code"] = code;
  counts["push.ms"] = Date.now() - t0;
}

/** The exec agent's socket: connections that claim a 1 MiB frame before any hello, opened again as they are dropped. */
async function agent(): Promise<void> {
  const head = Buffer.alloc(9);
  head.writeUInt8(1, 0);
  head.writeUInt32BE(1 << 20, 5);
  const one = async () => {
    while (flooding()) {
      await new Promise<void>((resolve) => {
        const s = connect({ path: join(sockDir, "agent.sock") });
        s.on("error", () => resolve());
        s.on("close", () => resolve());
        s.on("connect", () => {
          s.write(head);
          s.write(Buffer.alloc(512 * 1024, 120));
        });
      });
      count("agent.dropped");
      await Bun.sleep(20);
    }
  };
  await Promise.all(Array.from({ length: 20 }, one));
}

/** listen.sock: connections that never hand over a listener (each refused after its tries), many at once. */
async function listen(): Promise<void> {
  const one = async () => {
    while (flooding()) {
      await new Promise<void>((resolve) => {
        const s = connect({ path: join(sockDir, "listen.sock") });
        s.on("error", () => resolve());
        s.on("close", () => resolve());
      });
      count("listen.refused");
    }
  };
  await Promise.all(Array.from({ length: 20 }, one));
}

/** Ref churn: branches made and removed in the clone, so the daemon's ref sync runs again and again. */
async function refs(): Promise<void> {
  for (let i = 0; flooding(); i++) {
    await Bun.spawn(["git", "branch", "-f", `churn-${i % 50}`, i % 2 ? "HEAD" : "HEAD~1"], { stdout: "ignore", stderr: "ignore" }).exited;
    count("refs.moved");
    await Bun.sleep(20);
  }
}

// ONLY=a,b runs only those (for looking into one endpoint by hand); all of them otherwise.
const all: Record<string, () => Promise<void>> = { holdConnections: () => holdConnections(600), denials: () => Promise.all([denials(), denials(), denials(), denials()]).then(() => undefined), desk, portPolls, dns, llm, bridge, push, agent, listen, refs };
const only = process.env.ONLY?.split(",");
await Promise.all(Object.entries(all).filter(([k]) => !only || only.includes(k)).map(([k, run]) => run().catch((e) => void (counts[`error.${k}.${String(e).slice(0, 60)}`] = 1))));
counts["held.at-flood-end"] = held.filter((s) => !s.destroyed).length;
// Hold: nothing new is sent; what is held stays held.
const waits = Array.from({ length: 50 }, () => exchange(`GET /sbx/egress/approvals/1?wait=600 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
const polls = Array.from({ length: 20 }, () => exchange(`GET /sbx/transparent?known=1,2,3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
await Bun.sleep(Math.max(0, holdUntil - Date.now()));
counts["held.at-hold-end"] = held.filter((s) => !s.destroyed).length;
for (const s of held) s.destroy();
void waits;
void polls;
report();
process.exit(0);
