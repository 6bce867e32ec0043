// The office's plumbing for company-network-docker.test.ts (`bun -e` of this file's text, as root), in two roles.
// ROLE=office, inside the office's network namespace: the company's proxy as the office sees it, 127.0.0.1:PARENT_PORT,
// carried over the unix socket PARENT_SOCKET (the namespace has no other way out); and the office's DNS server on
// 127.0.0.1:53, which knows no name (REFUSED) and appends each name it is asked to DNS_LOG ("DNS <name>"): what the
// host's resolver could not answer from its hosts file. ROLE=bridge, on the host: PARENT_SOCKET carried on to the real
// proxy at 127.0.0.1:SQUID_PORT. (A process of its own, not the test's: the test waits on sbx synchronously.)
import { createSocket } from "node:dgram";
import { appendFileSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";

const env = process.env;

function pipeTo(c: Socket, u: Socket): void {
  c.pipe(u).pipe(c);
  c.on("error", () => u.destroy());
  u.on("error", () => c.destroy());
}

/** The first question's name of a DNS query. */
function qname(m: Buffer): string {
  const labels: string[] = [];
  for (let i = 12; i < m.length && m[i] !== 0 && labels.length < 64; ) {
    const n = m[i]!;
    labels.push(m.subarray(i + 1, i + 1 + n).toString("latin1"));
    i += n + 1;
  }
  return labels.join(".");
}

if (env.ROLE === "bridge") {
  const bridge = createServer({ allowHalfOpen: true }, (c) => pipeTo(c, connect({ host: "127.0.0.1", port: Number(env.SQUID_PORT), allowHalfOpen: true })));
  await new Promise<void>((r) => bridge.listen(env.PARENT_SOCKET!, r));
  console.log("bridge ready");
} else {
  const relay = createServer({ allowHalfOpen: true }, (c) => pipeTo(c, connect({ path: env.PARENT_SOCKET!, allowHalfOpen: true })));
  const dns = createSocket("udp4");
  dns.on("message", (m, from) => {
    if (m.length < 12) return;
    appendFileSync(env.DNS_LOG!, `DNS ${qname(m)}\n`);
    // The query back, as a response (QR), REFUSED (rcode 5), no answers.
    const r = Buffer.from(m);
    r[2] = (m[2]! | 0x80) & 0xf9;
    r[3] = 0x05;
    dns.send(r, from.port, from.address);
  });
  await new Promise<void>((r) => relay.listen(Number(env.PARENT_PORT ?? 3128), "127.0.0.1", r));
  await new Promise<void>((r) => dns.bind(53, "127.0.0.1", r));
  console.log("office ready");
}
